"""The partition-count agreement: every producer and worker of a queue uses one count.

Queue protocol, not URL parsing: the count is stored in each partition's ``meta`` hash
(docs/keys.md); ``redis_io.agreement`` runs this plan once per process and queue.
"""

from __future__ import annotations

from ..base.errors import ConfigError, NoSuchQueue
from .keys import partition_keys
from .plan import Command, Plan
from .replies import text

PARTITIONS_FIELD = "partitions"
LAYOUT_FIELD = "layout"  # the record layout promoteDue writes (docs/keys.md#layouts)
LAYOUT = 2  # this release's: a job in its stream keeps its body once, in the stream entry


def partition_check_plan(queue: str, partitions: int, create: bool = True) -> Plan[None]:
    """Check ``partitions`` against every partition's ``meta`` hash; record it when it is absent.

    The first process to touch a queue fixes its partition count (HSETNX); any process that uses
    another count later is refused with a ``ConfigError`` naming ``partitions``. Partition 0
    exists for every count, so two different counts always meet there. The stored count is read
    first, so a queue that exists costs no write (this runs while Redis is full); with
    ``create=False`` (read and operator commands) nothing is written, and a queue with neither
    a count nor jobs (a foreign producer writes no count) raises ``NoSuchQueue``
    (docs/operations.md). The process that creates a partition also sets its record layout to
    ``LAYOUT`` (``HSETNX``): a new queue starts on layout 2, one created by an older release
    stays on layout 1 until ``migrate_plan``.
    """
    found = False
    for keys in partition_keys(queue, partitions):
        stored = yield Command(("HGET", keys.meta, PARTITIONS_FIELD))
        if stored is None:
            if not create:  # a foreign producer (docs/keys.md) writes no meta: look for jobs
                found = found or bool((yield Command(("EXISTS", keys.jobs, keys.counts))))
                continue
            if int((yield Command(("HSETNX", keys.meta, PARTITIONS_FIELD, partitions)))):
                yield Command(("HSETNX", keys.meta, LAYOUT_FIELD, LAYOUT))
                continue
            stored = yield Command(("HGET", keys.meta, PARTITIONS_FIELD))
        found = True
        if text(stored) != str(partitions):
            raise ConfigError(
                f"partitions: queue {queue!r} was created with partitions={text(stored)} "
                f"(stored in Redis, key {keys.meta}) but this process uses "
                f"partitions={partitions}; every producer and worker of a queue must use the "
                f"same count (see docs/scale-out.md)",
                field="partitions")
    if not (found or create):
        raise NoSuchQueue(f"no such queue: {queue!r} (no producer or worker has used it on "
                          f"this Redis; check the name and the URL)")


def migrate_plan(queue: str, partitions: int) -> Plan[list[int]]:
    """Set every partition's record layout to ``LAYOUT`` (docs/operations.md#upgrading-a-running-
    queue); the layouts found before, per partition (1 where none was set).

    Idempotent and safe while workers of this release run: from the next ``promoteDue`` call on
    a partition, jobs moved into their stream keep their body once; every script of this
    release reads both layouts. Run it only once no process of a release before layout 2 is
    left (one of them would lose the body of a job it retries). The caller runs the queue check
    first (``NoSuchQueue`` for a queue nobody has used).
    """
    before = []
    for keys in partition_keys(queue, partitions):
        found = yield Command(("HGET", keys.meta, LAYOUT_FIELD))
        before.append(int(text(found)) if found is not None else 1)
        if before[-1] != LAYOUT:
            yield Command(("HSET", keys.meta, LAYOUT_FIELD, LAYOUT))
    return before
