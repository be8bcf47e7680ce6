"""The schedule operations of ``Queue`` / ``AsyncQueue`` and the CLI, as I/O-free plans.

Declaring (``schedule``), removing, pausing and resuming are each one script call on the
schedule's partition (after a read: the next tick comes from the spec, evaluated here against
the server clock), so they go through the same runner as ``enqueue``.
"""

from __future__ import annotations

from ..base.errors import StreamdelayError
from ..protocol.keys import partition_keys
from ..protocol.plan import Plan
from ..protocol.scripts import script
from .schedule_firing import parse_read
from .schedule_spec import Record, Schedule, ScheduleDef, home_keys, parse_record, schedule_info
from .schedule_spec import schedule_name as checked_name

SCAN_COUNT = 200
CAS_TRIES = 10


class ScheduleNotFound(StreamdelayError):
    """No schedule of that name on the queue."""


def _read_one(queue: str, partitions: int, name: str) -> Plan[tuple[int, Record | None]]:
    keys = home_keys(queue, partitions, name)
    reply = yield script("readSchedules").call(keys.script_keys(), ["names", name])
    now, _, pairs = parse_read(reply)
    raw = pairs[0][1]
    return now, parse_record(raw) if raw else None


def put_plan(queue: str, partitions: int, sdef: ScheduleDef) -> Plan[bool]:
    """Declare or change a schedule; False when the same spec was already there."""
    keys = home_keys(queue, partitions, sdef.name)
    timing = sdef.timing
    for _ in range(CAS_TRIES):
        now, record = yield from _read_one(queue, partitions, sdef.name)
        if record is not None and record.version == sdef.version:
            return False
        # compare-and-set on the version and the next tick: a dispatcher that fired in between
        # moved the last tick the new next tick is computed from
        expect = "" if record is None else f"{record.version}:{record.next_ms}"
        after = now if record is None else max(now, record.last_ms)
        call = script("putSchedule").call(keys.script_keys(), [
            sdef.name, expect, sdef.version, timing.next_after(after), sdef.encoded], durable=True)
        (status,) = yield call
        if int(status) >= 0:
            return int(status) == 1
    raise StreamdelayError(f"schedule {sdef.name!r}: changed by others {CAS_TRIES} times "
                           "while declaring it; try again")


def drop_plan(queue: str, partitions: int, name: str) -> Plan[bool]:
    """Remove a schedule and cancel its ticks not yet due; False when there was none."""
    keys = home_keys(queue, partitions, checked_name(name))
    existed, _cancelled = yield script("dropSchedule").call(keys.script_keys(), [name],
                                                               durable=True)
    return bool(int(existed))


def pause_plan(queue: str, partitions: int, name: str, paused: bool) -> Plan[bool]:
    """Pause or resume a schedule; False when it already was. ``ScheduleNotFound`` if absent."""
    keys = home_keys(queue, partitions, checked_name(name))
    if paused:
        status, _ = yield script("pauseSchedule").call(keys.script_keys(), [name, "1"],
                                                       durable=True)
        if int(status) == -2:
            raise ScheduleNotFound(f"name: no schedule {name!r}", field="name")
        return int(status) == 1
    for _ in range(CAS_TRIES):
        now, record = yield from _read_one(queue, partitions, name)
        if record is None:
            raise ScheduleNotFound(f"name: no schedule {name!r}", field="name")
        if not record.paused:
            return False
        # ticks that fell in the pause are not run: resume from the first one not yet past
        nxt = record.next_ms
        if nxt < now:
            nxt = record.definition.timing.next_after(now - 1)
        status, _ = yield script("pauseSchedule").call(keys.script_keys(), [
            name, "0", record.version, record.next_ms, nxt], durable=True)
        if int(status) != -1:
            return int(status) == 1
    raise StreamdelayError(f"schedule {name!r}: changed by others while resuming it; try again")


def list_plan(queue: str, partitions: int) -> Plan[list[Schedule]]:
    """Every schedule of the queue, by name."""
    found: list[Schedule] = []
    for keys in partition_keys(queue, partitions):
        cursor = "0"
        while True:
            reply = yield script("readSchedules").call(keys.script_keys(),
                                                       ["scan", cursor, SCAN_COUNT])
            _, cursor, pairs = parse_read(reply)
            found += [schedule_info(name, parse_record(raw)) for name, raw in pairs]
            if cursor == "0":
                break
    return sorted(found, key=lambda s: s.name)


def next_plan(queue: str, partitions: int, name: str, count: int) -> Plan[list[int]]:
    """The next ``count`` ticks (epoch ms) the schedule will enqueue; [] while paused."""
    now, record = yield from _read_one(queue, partitions, checked_name(name))
    if record is None:
        raise ScheduleNotFound(f"name: no schedule {name!r}", field="name")
    if record.paused or record.next_ms < 0:
        return []
    timing = record.definition.timing
    start = record.next_ms if record.next_ms >= now else timing.next_after(now - 1)
    return timing.upcoming(start, count)
