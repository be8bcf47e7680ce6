"""Firing schedules: which ticks a dispatcher enqueues now, and the plan that does it.

A dispatcher that sees a schedule due (``promoteDue`` reports the earliest next tick) reads the
due records, evaluates each spec here, and sends one ``fireSchedule`` call per schedule: the call
enqueues the ticks and advances the schedule's next tick only if that next tick is still the one
read (compare-and-set), so racing dispatchers, a retry or a crash between two calls never fire a
tick twice or skip one (docs/schedules.md#exactly-once-per-tick).
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from typing import Any

from ..base.errors import StreamdelayError
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Plan
from ..protocol.scripts import Arg, ScriptCall, script
from .schedule_spec import Record, parse_record, tick_id
from .schedule_timing import Timing

log = logging.getLogger("streamdelay.dispatcher")
# A tick is enqueued (as a delayed job due at its time) once it is at most LEAD_MS away, so its
# lateness is a job's lateness; it is *missed* when no dispatcher enqueued it by GRACE_MS after
# its time. At most MISSED_CAP missed ticks come back with missed="all" (the latest ones) and at
# most AHEAD_CAP ticks go out in one call. FIRE_BATCH schedules are read per round.
LEAD_MS = 2000
GRACE_MS = 1000
MISSED_CAP = 100
AHEAD_CAP = 100
FIRE_BATCH = 50


def jitter_ms(name: str, tick: int, jitter: int) -> int:
    """A tick's delay after its time: the same for every dispatcher (a digest of its id)."""
    if jitter <= 0:
        return 0
    return zlib.crc32(tick_id(name, tick).encode()) % (jitter + 1)


@dataclass(frozen=True)
class Firing:
    """What to enqueue for one schedule now: ``ticks``, the new next tick, and how many ticks
    went by unfired (``missed``) and of those were enqueued all the same (``recovered``)."""

    ticks: tuple[int, ...]
    new_next: int
    missed: int = 0
    recovered: int = 0


def plan_ticks(record: Record, now: int) -> Firing | None:
    """The ticks a dispatcher enqueues at server time ``now`` (None: nothing is due).

    Ticks older than ``now - GRACE_MS`` are missed: ``skip`` drops them, ``once`` enqueues the
    latest of them, ``all`` each of them (the latest ``MISSED_CAP``). Every other tick up to
    ``now + LEAD_MS`` is enqueued, due at its own time (plus its jitter).
    """
    start = record.next_ms
    if start < 0:
        return None
    timing = record.definition.timing
    ticks: list[int] = []
    cut = now - GRACE_MS
    missed = 0
    if start < cut:
        policy = record.spec.missed
        if policy != "skip":
            ticks = timing.last_before(cut, 1 if policy == "once" else MISSED_CAP, start)
        start = timing.next_after(cut - 1)
        missed = _count_between(timing, record.next_ms, cut)
    tick = start
    while 0 <= tick <= now + LEAD_MS and len(ticks) < MISSED_CAP + AHEAD_CAP:
        ticks.append(tick)
        tick = timing.next_after(tick)
    if tick == record.next_ms and not ticks:
        return None
    recovered = len([t for t in ticks if t < cut])
    return Firing(tuple(ticks), tick, missed, recovered)


def _count_between(timing: Timing, first: int, cut: int) -> int:
    """How many ticks lie in ``[first, cut)`` (exact for ``every``; counted up to 10,000 for
    cron, enough for a log line)."""
    if timing.every_ms is not None:
        return (cut - 1 - first) // timing.every_ms + 1
    count, tick = 0, first
    while 0 <= tick < cut and count < 10_000:
        count += 1
        tick = timing.next_after(tick)
    return count


def fire_call(keys: PartitionKeys, name: str, record: Record, firing: Firing) -> ScriptCall:
    """The ``fireSchedule`` call for ``firing`` (compare-and-set on the record's next tick)."""
    spec = record.spec
    args: list[Arg] = [name, record.version, record.next_ms, firing.new_next, spec.topic,
                       spec.ttr_ms, spec.max_attempts, spec.blob]
    for tick in firing.ticks:
        args += [tick, tick + jitter_ms(name, tick, spec.jitter_ms)]
    return script("fireSchedule").call(keys.script_keys(), args)


def parse_read(reply: Any) -> tuple[int, str, list[tuple[str, bytes]]]:
    """Parse ``readSchedules``: server time, scan cursor and (name, raw record) pairs."""
    now, cursor, *flat = reply
    pairs = [(_text(flat[i]), _raw(flat[i + 1])) for i in range(0, len(flat), 2)]
    return int(now), _text(cursor), pairs


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


@dataclass(frozen=True)
class FireOutcome:
    """One round of firing on a partition: schedules advanced and tick jobs created."""

    advanced: int
    created: int


def fire_due_plan(keys: PartitionKeys) -> Plan[FireOutcome]:
    """Read the due schedules of a partition and fire each (one call per schedule)."""
    reply = yield script("readSchedules").call(keys.script_keys(),
                                               ["due", LEAD_MS, FIRE_BATCH])
    now, _, pairs = parse_read(reply)
    advanced = created = 0
    for name, raw in pairs:
        try:
            record = parse_record(raw)
            firing = plan_ticks(record, now)
        except StreamdelayError as exc:
            log.warning("schedule %r of queue %s cannot fire: %s", name, keys.queue, exc,
                        extra={"queue": keys.queue, "schedule": name})
            continue
        if firing is None:
            continue
        made, status = (yield fire_call(keys, name, record, firing))
        advanced += int(status)
        created += int(made)
        if int(status) and firing.missed:
            log.warning("schedule %r of queue %s: %d tick(s) went by with no dispatcher; "
                        "missed=%s enqueued %d of them", name, keys.queue, firing.missed,
                        record.spec.missed, firing.recovered,
                        extra={"queue": keys.queue, "schedule": name})
    return FireOutcome(advanced, created)
