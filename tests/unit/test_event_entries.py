"""The events stream's two entry shapes read back (``protocol/event_entries.py``,
docs/events.md#entries)
from recorded replies, no Redis: a packed entry unpacks into its events in order, the merger's
cursor positions inside an entry (``<entry id>.<n>``) resume after exactly that event, and the
dashboard's newest-events plan counts events, not entries."""

from __future__ import annotations

from typing import Any

import pytest

from streamdelay.base.errors import ValidationError
from streamdelay.protocol.event_entries import (
    EventMerger,
    entry_events,
    latest_events_plan,
    start_ids,
)
from streamdelay.protocol.plan import Step
from tests.unit.test_replies import drive

PACKED = {b"n": b"4", b"i": b"a\nb\nc\nd", b"d": b"1-0\n1-1\n\n", b"k": b"1 promoted 3 started",
          b"a": b"1 0 3 1", b"@": b"1 1000 3 990 4 995", b"t": b"1 5 ship.3 6 ship.x"}
OLD = {b"k": b"cancelled", b"i": b"old", b"t": b"legacy", b"a": b"2", b"at": b"5",
       b"d": b"delayed"}


def test_a_packed_entry_gives_every_event_in_order() -> None:
    assert entry_events(PACKED) == [
        ("promoted", "a", "ship.", 0, 1000, "1-0"),
        ("promoted", "b", "ship.", 0, 1000, "1-1"),
        ("started", "c", "ship.x", 1, 990, ""),
        ("started", "d", "ship.x", 1, 995, ""),
    ]
    flat: list[Any] = [v for pair in PACKED.items() for v in pair]  # RESP2 flat list
    assert entry_events(flat) == entry_events(PACKED)


def test_an_old_entry_and_foreign_ones() -> None:
    assert entry_events(OLD) == [("cancelled", "old", "legacy", 2, 5, "delayed")]
    assert entry_events({b"x": b"1"}) == []
    assert entry_events({**PACKED, b"n": b"3"}) == []  # ids and count disagree: skipped


def test_positions_inside_an_entry() -> None:
    assert start_ids(2, "5-0.2,7-1") == ["5-0.2", "7-1"]
    with pytest.raises(ValidationError):
        start_ids(2, "5-0.x,7-1")
    merger = EventMerger(["5-0.2", "0-0"])
    assert merger.read_ids() == ["4-18446744073709551615", "0-0"]
    merger.add(0, [("5-0", PACKED), ("6-0", OLD)], False)
    merger.add(1, [], False)
    events = merger.ready()
    assert [e.id for e in events] == ["c", "d", "old"]
    assert [e.cursor for e in events] == ["5-0.3,0-0", "5-0,0-0", "6-0,0-0"]
    assert merger.read_ids() == ["6-0", "0-0"]


def test_the_newest_events_count_events_not_entries() -> None:
    def answer(step: Step) -> Any:
        args = step.args  # type: ignore[union-attr]
        return b"100" if args[0] == "HGET" else [(b"5-0", PACKED)]

    (on, found), _ = drive(latest_events_plan("q", 1, 3), answer)
    assert on and [(e.id, e.cursor) for e in found] == [("d", "5-0"), ("c", "5-0.3"),
                                                        ("b", "5-0.2")]
