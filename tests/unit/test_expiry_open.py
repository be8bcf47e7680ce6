"""The open step's deadline check (docs/expiry.md), I/O-free: an entry whose deadline (field
``x``) the read's server clock has reached is expired, never decoded; the entry's own id is a
lower bound of that clock; an entry without the field is never expired; a take reads TIME with
its entries."""

from __future__ import annotations

from streamdelay.consume.core.taking import TIME, clock_ms, read_plan
from streamdelay.protocol.deliveries import EXPIRED, open_entry
from streamdelay.protocol.plan import Command, Commands


def _open(fields: dict[bytes, bytes], entry_id: str, now_ms: int) -> tuple[bool, str]:
    opened = open_entry(fields, "t", entry_id, 0, now_ms=now_ms)
    return opened.expired, opened.error


def test_expired_once_the_clock_reaches_the_deadline() -> None:
    fields = {b"id": b"a", b"rec": b"", b"x": b"5000"}
    assert _open(fields, "1000-0", 4999)[0] is False
    assert _open(fields, "1000-0", 5000) == (True, EXPIRED)
    assert _open(fields, "6000-0", 0) == (True, EXPIRED)  # the entry id bounds the clock


def test_no_deadline_field_or_a_malformed_one_is_not_expired() -> None:
    assert _open({b"id": b"a", b"rec": b""}, "9000-0", 10**13)[0] is False
    assert _open({b"id": b"a", b"rec": b"", b"x": b"soon"}, "9000-0", 10**13)[0] is False


def test_a_read_carries_time_in_its_pipeline() -> None:
    streams = {"sd:{q#0}:t:t": (0, "t")}
    plan = read_plan("g", "c", streams, 5, 1000)
    step = next(plan)
    assert isinstance(step, Commands) and step.commands[-1] == TIME
    reply = [[[b"sd:{q#0}:t:t", [[b"1-0", {b"id": b"a"}]]]], [b"1764000000", b"123456"]]
    try:
        plan.send(reply)
    except StopIteration as done:
        [entry] = done.value
        assert entry.now_ms == clock_ms(reply[1]) == 1764000000123
    else:
        raise AssertionError("the read plan yields one step")


def _finish(plan: object, reply: object) -> object:
    try:
        plan.send(reply)  # type: ignore[attr-defined]
    except StopIteration as done:
        return done.value
    raise AssertionError("the plan asked for another step")


def test_a_read_without_the_clock_sends_the_read_alone() -> None:
    """A worker that has seen no deadline reads without TIME (docs/expiry.md#cost)."""
    streams = {"sd:{q#0}:t:t": (0, "t")}
    plan = read_plan("g", "c", streams, 5, 1000, clock=False)
    step = next(plan)
    assert isinstance(step, Command) and step.args[0] == "XREADGROUP"
    entries = _finish(plan, [[b"sd:{q#0}:t:t", [[b"1-0", {b"id": b"a", b"rec": b""}]]]])
    assert [(e.entry_id, e.now_ms) for e in entries] == [("1-0", 0)]  # type: ignore[attr-defined]


def test_a_read_without_the_clock_reads_time_after_an_entry_with_a_deadline() -> None:
    """An entry with a deadline (field x) makes the read plan ask TIME next, one more round
    trip, and every entry of the read carries that clock."""
    streams = {"sd:{q#0}:t:t": (0, "t")}
    plan = read_plan("g", "c", streams, 5, None, clock=False)
    assert isinstance(next(plan), Command)
    step = plan.send([[b"sd:{q#0}:t:t", [[b"1-0", {b"id": b"a"}],
                                          [b"2-0", {b"id": b"b", b"x": b"5"}]]]])
    assert step == TIME
    entries = _finish(plan, [b"1764000000", b"123456"])
    assert [e.now_ms for e in entries] == [1764000000123] * 2  # type: ignore[attr-defined]
