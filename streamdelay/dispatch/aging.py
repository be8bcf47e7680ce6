"""Priority aging (docs/priorities.md#aging): the queue's ``priority_aging`` written where
``promoteDue`` and ``takeStaged`` read it. Both the dispatcher and a worker with an embedded
dispatcher write it at start, so it sits with the dispatcher's duties.
"""

from __future__ import annotations

from ..protocol.keys import partition_keys
from ..protocol.plan import Command, Commands, Plan

AGING_FIELD = "priority_aging"  # field of each partition's meta: ms per priority level


def aging_plan(queue: str, partitions: int, seconds: float | None) -> Plan[None]:
    """Write the queue's ``priority_aging`` (ms) to each partition's ``meta``, where
    ``promoteDue`` and ``takeStaged`` rank ready jobs with it (None: nothing written)."""
    if seconds is None:
        return
    ms = max(1, round(seconds * 1000))
    yield Commands(tuple(Command(("HSET", k.meta, AGING_FIELD, ms))
                         for k in partition_keys(queue, partitions)))
