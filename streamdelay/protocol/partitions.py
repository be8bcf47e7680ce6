"""The partition-count agreement: every producer and worker of a queue uses one count.

Queue protocol, not URL parsing: the count is stored in each partition's ``meta`` hash
(docs/keys.md); ``io.agreement`` runs this plan once per process and queue.
"""

from __future__ import annotations

from ..base.errors import ConfigError, NoSuchQueue
from .event_entries import EVENTS_FIELD
from .keys import PartitionKeys, partition_keys
from .layouts import LAYOUT_FIELD, NEW_QUEUE_LAYOUT, layout_of
from .plan import Command, Plan
from .replies import text

PARTITIONS_FIELD = "partitions"
RETENTION_FIELDS = ("dead_ttl", "dead_max")  # ms, count: read by promoteDue (docs/keys.md)
Retention = tuple[int | None, int | None]


def partition_check_plan(queue: str, partitions: int, create: bool = True,
                         events: int | None = None,
                         retention: Retention = (None, None)) -> Plan[None]:
    """Check ``partitions`` against every partition's ``meta`` hash; record it when it is absent.

    The first process to touch a queue fixes its partition count (HSETNX); any process that uses
    another count later is refused with a ``ConfigError`` naming ``partitions``. Partition 0
    exists for every count, so two different counts always meet there. The stored count is read
    first, so a queue that exists costs no write (this runs while Redis is full); with
    ``create=False`` (read and operator commands) nothing is written, and a queue with neither
    a count nor jobs (a foreign producer writes no count) raises ``NoSuchQueue``
    (docs/operations.md). The same read gets each partition's record layout: one this release
    cannot read raises ``LayoutError``. The process that creates a partition sets its layout to
    ``NEW_QUEUE_LAYOUT`` (1, what every release reads): a layout change is ``migrate_plan``'s
    checked step only (docs/keys.md#layouts). ``events`` (not None): the lifecycle events
    switch each partition's ``meta`` gets (its bound, 0 = off; docs/events.md#the-switch),
    written only where it differs; ``retention`` likewise: the dead-letter retention
    (``dead_ttl`` ms, ``dead_max``; None leaves a field as it is), which the dispatchers'
    ``promoteDue`` applies (docs/reliability.md#dead-letter-retention).
    """
    kept = [(f, str(v)) for f, v in zip(RETENTION_FIELDS, retention, strict=True)
            if v is not None]
    found = False
    for keys in partition_keys(queue, partitions):
        wanted = (PARTITIONS_FIELD, LAYOUT_FIELD) + ((EVENTS_FIELD,) if events is not None else ())
        stored, layout, *bound = yield Command(("HMGET", keys.meta, *wanted))
        layout_of(layout, keys.meta)
        if bound and (stored is not None or create) and (
                text(bound[0]) if bound[0] is not None else "0") != str(events):
            yield Command(("HSET", keys.meta, EVENTS_FIELD, events))
        if kept and (stored is not None or create):
            now = yield Command(("HMGET", keys.meta, *(f for f, _ in kept)))
            if [text(v) if v is not None else None for v in now] != [v for _, v in kept]:
                yield Command(("HSET", keys.meta, *(x for pair in kept for x in pair)))
        if stored is None:
            if not create:  # a foreign producer (docs/keys.md) writes no meta: look for jobs
                found = found or bool((yield Command(("EXISTS", keys.jobs, keys.counts))))
                continue
            if int((yield Command(("HSETNX", keys.meta, PARTITIONS_FIELD, partitions)))):
                yield Command(("HSETNX", keys.meta, LAYOUT_FIELD, NEW_QUEUE_LAYOUT))
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


def retention_plan(queue: str) -> Plan[Retention]:
    """The dead-letter retention in force: partition 0's ``meta`` fields ``dead_ttl`` (ms) and
    ``dead_max``, None where unset or not a positive number (what promoteDue reads;
    docs/reliability.md#dead-letter-retention)."""
    found = yield Command(("HMGET", PartitionKeys(queue, 0).meta, *RETENTION_FIELDS))
    ttl, most = (int(v) if v.isdigit() and int(v) > 0 else None
                 for v in (text(f) if f is not None else "" for f in found))
    return ttl, most
