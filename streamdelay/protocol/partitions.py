"""The partition-count agreement: every producer and worker of a queue uses one count.

Queue protocol, not URL parsing: the count is stored in each partition's ``meta`` hash
(docs/keys.md); ``redis_io.agreement`` runs this plan once per process and queue.
"""

from __future__ import annotations

from ..base.errors import ConfigError
from .keys import partition_keys
from .plan import Command, Plan
from .replies import text

PARTITIONS_FIELD = "partitions"


def partition_check_plan(queue: str, partitions: int) -> Plan[None]:
    """Record ``partitions`` in every partition's ``meta`` hash (HSETNX) or refuse a mismatch.

    The first process to touch a queue fixes its partition count; any process that uses another
    count later is refused with a ``ConfigError`` naming ``partitions``. Partition 0 exists for
    every count, so two different counts always meet there.
    """
    for keys in partition_keys(queue, partitions):
        created = yield Command(("HSETNX", keys.meta, PARTITIONS_FIELD, partitions))
        if int(created):
            continue
        stored = text((yield Command(("HGET", keys.meta, PARTITIONS_FIELD))))
        if stored != str(partitions):
            raise ConfigError(
                f"partitions: queue {queue!r} was created with partitions={stored} (stored in "
                f"Redis, key {keys.meta}) but this process uses partitions={partitions}; every "
                f"producer and worker of a queue must use the same count (see docs/scale-out.md)",
                field="partitions")
