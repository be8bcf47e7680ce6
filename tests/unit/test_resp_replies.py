"""The reply normalisers (protocol/streams.py, protocol/replies.py) and the plans built on them,
on replies recorded from a real server by redis-py on RESP2, on RESP3 (``?protocol=3``) and in
redis-py 8's unified shapes (tests/unit/resp_recorded.py, written by
tests/support/resp_replies.py; checked against a live server by tests/integration/test_resp3.py):
every reader of a stream read, an ``XINFO`` row or a ``WITHSCORES`` range gets the same from
each, and the plans built on them (the Worker's and ``reserve``'s read, the events reader, the
outbox forward, the staged backlog, ``migrate``'s consumer list) answer the same
(docs/scale-out.md#urls)."""

from __future__ import annotations

from typing import Any

import pytest

from streamdelay.client.event_feed import _parse as parse_events_read
from streamdelay.consume.core.pending import own_pending_plan
from streamdelay.consume.core.taking import Entry, parse_read, read_plan
from streamdelay.dispatch.outbox import forward_plan
from streamdelay.io.config import QueueConfig
from streamdelay.limits.keyed import backlog_plan
from streamdelay.protocol.event_entries import read_entries
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.layouts import blockers_plan
from streamdelay.protocol.plan import Command, Commands, Step
from streamdelay.protocol.replies import field_map, scored_members
from streamdelay.protocol.streams import info_row, read_reply
from tests.unit import resp_recorded
from tests.unit.test_replies import drive

SHAPES = {"resp2": resp_recorded.RESP2, "resp3": resp_recorded.RESP3,
          "unified": resp_recorded.UNIFIED}
S1, S2 = "rec:{r}s1", "rec:{r}s2"
FIRST = ("1-1", {b"f": b"v", b"x": b"1"})
SECOND = ("2-1", {b"f": b"w"})


@pytest.fixture(params=sorted(SHAPES))
def recorded(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The replies of one shape."""
    return SHAPES[request.param]


def test_the_shapes_differ_where_the_normalisers_matter() -> None:
    """The recordings are of three shapes (else the tests below prove nothing)."""
    assert isinstance(resp_recorded.RESP2["xreadgroup_two_streams"], list)
    assert isinstance(resp_recorded.RESP3["xreadgroup_two_streams"], dict)
    assert resp_recorded.RESP3["xreadgroup_one_entry"] != resp_recorded.UNIFIED[
        "xreadgroup_one_entry"]  # redis-py's RESP3 wraps each stream's entries once more
    assert resp_recorded.RESP2["xinfo_groups"][0][0] == b"name"  # a flat list
    assert resp_recorded.RESP2["zrevrange_withscores"] != resp_recorded.RESP3[
        "zrevrange_withscores"]


def test_a_read_of_two_streams(recorded: dict[str, Any]) -> None:
    for name in ("xreadgroup_two_streams", "xread_two_streams"):
        assert read_reply(recorded[name]) == [(S1, [FIRST, SECOND]), (S2, [FIRST, SECOND])]


def test_a_read_of_one_entry(recorded: dict[str, Any]) -> None:
    """One entry: RESP3's extra list of one used to be taken for the entry (not enough values
    to unpack); with two, a whole entry became an id ("Invalid stream ID" at the settle)."""
    assert read_reply(recorded["xreadgroup_one_entry"]) == [(S1, [FIRST])]


def test_a_read_of_nothing(recorded: dict[str, Any]) -> None:
    assert read_reply(recorded["xreadgroup_nothing"]) == []
    assert read_reply(recorded["xread_nothing"]) == []
    assert read_reply(None) == []


def test_raw_and_wrapped_entries_and_a_deleted_one() -> None:
    """Entries no callback parsed (flat field lists), an empty stream wrapped, and the
    ``(None, None)`` of an entry deleted while pending."""
    raw = [[b"s", [[b"1-1", [b"f", b"v"]], [b"2-1", [b"f", b"w"]]]]]
    assert read_reply(raw) == [("s", [("1-1", {b"f": b"v"}), ("2-1", {b"f": b"w"})])]
    assert read_reply({b"s": [[[b"1-1", [b"f", b"v"]]]]}) == [("s", [("1-1", {b"f": b"v"})])]
    assert read_reply({b"s": [[]]}) == [("s", [])]
    assert read_reply([[b"s", [(None, None), (b"2-1", {b"f": b"w"})]]]) == [
        ("s", [("2-1", {b"f": b"w"})])]


def test_the_worker_and_reserve_read_the_same_entries(recorded: dict[str, Any]) -> None:
    streams = {S1: (0, "a"), S2: (1, "b")}
    entries = parse_read(recorded["xreadgroup_two_streams"], streams, now_ms=5)
    assert [(e.partition, e.topic, e.entry_id, e.fields, e.fresh) for e in entries] == [
        (0, "a", "1-1", FIRST[1], True), (0, "a", "2-1", SECOND[1], True),
        (1, "b", "1-1", FIRST[1], True), (1, "b", "2-1", SECOND[1], True)]


def test_the_read_plan_with_its_clock(recorded: dict[str, Any]) -> None:
    def answer(step: Step) -> Any:
        assert isinstance(step, Commands)
        return [recorded["xreadgroup_one_entry"], (1_700_000_000, 250_000)]

    entries, _ = drive(read_plan("g", "c", {S1: (0, "a")}, 10, None), answer)
    assert entries == [Entry(0, "a", "1-1", FIRST[1], now_ms=1_700_000_000_250, fresh=True)]


def test_the_events_reader(recorded: dict[str, Any]) -> None:
    read = parse_events_read([S1, S2, "other"], [0, 1, 2], recorded["xread_two_streams"])
    assert read == [(0, [FIRST, SECOND], False), (1, [FIRST, SECOND], False), (2, [], False)]
    assert read_entries(recorded["xread_two_streams"])[S2] == [
        ("1-1", {"f": "v", "x": "1"}), ("2-1", {"f": "w"})]


def test_the_outbox_forward(recorded: dict[str, Any]) -> None:
    """A forward reads its outbox's XREAD on either shape (here: an outbox of no known
    target, so it only drops the entries it read)."""
    keys = PartitionKeys("q", 0)
    outbox = keys.prefix + "outbox"
    reply = recorded["xread_two_streams"]
    reply = ({outbox: reply[S1.encode()]} if isinstance(reply, dict)
             else [[outbox.encode(), reply[0][1]]])
    seen: list[Step] = []

    def answer(step: Step) -> Any:
        seen.append(step)
        return 2

    changed, _ = drive(forward_plan(keys, 1, reply), answer)
    assert changed == 0
    assert [list(step.args) for step in seen] == [["1-1", "2-1"]]  # type: ignore[union-attr]


def test_xinfo_rows(recorded: dict[str, Any]) -> None:
    groups = [info_row(row) for row in recorded["xinfo_groups"]]
    assert [(g["name"], g["pending"], g["last-delivered-id"]) for g in groups] == [
        (b"g1", 1, b"1-1"), (b"g2", 2, b"2-1")]
    consumer = info_row(recorded["xinfo_consumers"][0])
    assert (consumer["name"], consumer["pending"], consumer["idle"]) == (b"c", 1, 0)


def test_migrate_lists_the_consumers(recorded: dict[str, Any]) -> None:
    """``blockers_plan`` finds a consumer seen just now (idle 0) on either shape."""
    def answer(step: Step) -> Any:
        if isinstance(step, Commands):
            return [[b"t"], []]  # HKEYS of groups, counts
        assert isinstance(step, Command)
        if step.args[0] == "XINFO":
            return recorded["xinfo_groups" if step.args[1] == "GROUPS" else "xinfo_consumers"]
        return {"TIME": (1_700_000_000, 0), "HGETALL": {}, "TYPE": b"stream"}[step.args[0]]

    blockers, _ = drive(blockers_plan("q", 1, 2, 60.0), answer)
    assert [b.consumer for b in blockers] == ["c"]


def test_scored_members(recorded: dict[str, Any]) -> None:
    assert scored_members(recorded["zrevrange_withscores"]) == [(b"alpha", 3.0),
                                                               (b"beta", 1.5)]
    assert scored_members([]) == []
    assert scored_members({b"alpha": b"3"}) == [(b"alpha", 3.0)]


def test_the_staged_backlog(recorded: dict[str, Any]) -> None:
    def answer(step: Step) -> Any:
        assert isinstance(step, Commands)
        if step.commands[0].args[0] == "HGETALL":
            return [{b"s": b"1"}, {b"s": b"4"}]  # staged flags, ready per topic
        return [recorded["zrevrange_withscores"]]

    (staged, backlog), _ = drive(backlog_plan(QueueConfig("q", "redis://127.0.0.1:1/0")),
                                 answer)
    assert staged == frozenset({"s"})
    assert (backlog["s"].ready, backlog["s"].keys) == (4, (("alpha", 3), ("beta", 1)))


def test_hashes_and_pending_rows(recorded: dict[str, Any]) -> None:
    assert field_map(recorded["hgetall"]) == {"a": "1", "b": "2"}
    assert field_map(recorded["hgetall_missing"]) == {}

    def answer(step: Step) -> Any:
        return recorded["xpending_range"]

    (found, more), _ = drive(own_pending_plan(PartitionKeys("q", 0), "g", "c", ["t"], 10),
                             answer)
    assert (found, more) == ([("t", "1-1"), ("t", "2-1")], False)


def test_a_script_reply_is_the_same_on_every_shape() -> None:
    """A Lua table stays an array on RESP3 (Lua ``true`` still 1, a double cut to an integer,
    ``false`` nil): the script reply parsers need no normaliser."""
    tables = {name: replies["script_table"] for name, replies in SHAPES.items()}
    assert set(map(repr, tables.values())) == {repr([1, b"a", [2, 3], 3, 1, None])}
