"""protocol/streams.py: each stream command as it is built, and each reply reader on replies
recorded from a real redis-server on RESP2, RESP3 and redis-py 8's unified shapes
(tests/unit/resp_recorded.py, written by ``python -m tests.support.resp_replies``; checked
against a live server by tests/integration/test_resp3.py): every shape reads the same."""

from __future__ import annotations

from typing import Any

import pytest

from streamdelay.protocol import streams
from tests.support.resp_replies import COMMANDS, reader
from tests.unit import resp_recorded

SHAPES = {"resp2": resp_recorded.RESP2, "resp3": resp_recorded.RESP3,
          "unified": resp_recorded.UNIFIED}
S1, S2, S3 = "rec:{r}s1", "rec:{r}s2", "rec:{r}s3"
FIRST = ("1-1", {b"f": b"v", b"x": b"1"})
SECOND = ("2-1", {b"f": b"w"})


STREAM_REPLIES = sorted(name for name in resp_recorded.RESP2 if name.startswith("x"))

# what each reader gives, the same on every shape
EXPECTED: dict[str, Any] = {
    "xreadgroup_two_streams": [(S1, [FIRST, SECOND]), (S2, [FIRST, SECOND])],
    "xreadgroup_one_entry": [(S1, [FIRST])],
    "xreadgroup_nothing": [],
    "xreadgroup_own_pending": [(S1, [FIRST, SECOND])],
    "xread_two_streams": [(S1, [FIRST, SECOND]), (S2, [FIRST, SECOND])],
    "xread_nothing": [],
    "xinfo_stream": streams.StreamInfo(2, 2, "2-1", FIRST, SECOND),
    "xpending_range": [streams.Pending("1-1", "c", 0, 2), streams.Pending("2-1", "c", 0, 2)],
    "xpending_range_idle": [streams.Pending("1-1", "c", 0, 2),
                            streams.Pending("2-1", "c", 0, 2)],
    "xpending_summary": streams.PendingSummary(2, "1-1", "2-1", {"c": 2}),
    "xpending_summary_empty": streams.PendingSummary(0, None, None, {}),
    "xrange": [FIRST, SECOND],
    "xrange_one": [SECOND],
    "xrange_missing": [],
    "xrevrange": [SECOND, FIRST],
    "xlen": 2,
    "xclaim": [FIRST],
    "xclaim_justid": ["2-1"],
    "xautoclaim": streams.Autoclaimed("0-0", [FIRST], []),
    "xgroup_create": True,
    "xadd": "1-1",
    "xadd_capped": "2-1",
    "xack": 0,
    "xdel": 1,
    "xtrim": 1,
    "xgroup_setid": True,
    "xgroup_delconsumer": 0,
    "xgroup_destroy": 1,
}


def test_every_stream_reply_is_recorded_and_expected() -> None:
    """Every stream command the recorder sends has its reply stored and an expectation here."""
    recorded = {name for name in COMMANDS if name.startswith("x")}
    assert recorded == set(STREAM_REPLIES) == set(EXPECTED) | {"xinfo_groups",
                                                               "xinfo_consumers"}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_reader_reads_each_shape_the_same(shape: str, name: str) -> None:
    assert reader(name)(SHAPES[shape][name]) == EXPECTED[name]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_xinfo_rows(shape: str) -> None:
    groups = streams.info_rows(SHAPES[shape]["xinfo_groups"])
    assert [(g["name"], g["pending"], g["last-delivered-id"]) for g in groups] == [
        (b"g1", 1, b"1-1"), (b"g2", 2, b"2-1")]
    (consumer,) = streams.info_rows(SHAPES[shape]["xinfo_consumers"])
    assert (consumer["name"], consumer["pending"], consumer["idle"]) == (b"c", 1, 0)


def test_the_shapes_differ_where_the_readers_matter() -> None:
    """The recordings differ (else the tests above prove nothing)."""
    assert isinstance(resp_recorded.RESP2["xreadgroup_two_streams"], list)
    assert isinstance(resp_recorded.RESP3["xreadgroup_two_streams"], dict)
    assert isinstance(resp_recorded.RESP2["xinfo_stream"], list)
    assert isinstance(resp_recorded.RESP3["xinfo_stream"], dict)


def test_raw_rows_and_deleted_entries() -> None:
    """Replies no redis-py callback parsed (raw rows, flat field lists) and the ``(None, None)``
    of an entry deleted while pending (XCLAIM, XREADGROUP of a pending list)."""
    assert streams.entries([[b"1-1", [b"f", b"v"]], (None, None), [b"2-1", None]]) == [
        ("1-1", {b"f": b"v"})]
    assert streams.pending_rows([[b"1-1", b"c", 5, 3]]) == [streams.Pending("1-1", "c", 5, 3)]
    assert streams.pending_summary_of([3, b"1-1", b"4-1", [[b"c", b"3"]]]) == (
        streams.PendingSummary(3, "1-1", "4-1", {"c": 3}))
    assert streams.autoclaimed([b"5-1", [[b"4-1", [b"f", b"v"]]], [b"3-1"]]) == (
        streams.Autoclaimed("5-1", [("4-1", {b"f": b"v"})], ["3-1"]))
    assert streams.read_reply(None) == []
    assert streams.stream_info([b"length", 0, b"groups", 0, b"last-generated-id", b"0-0",
                                b"first-entry", None, b"last-entry", None]) == (
        streams.StreamInfo(0, 0, "0-0", None, None))


def test_the_commands() -> None:
    """The words each builder sends (the recorder above sent them to a real server)."""
    assert streams.read_group("g", "c", ["a", "b"], 0, 5).args == (
        "XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "BLOCK", 5, "STREAMS", "a", "b", ">", ">")
    assert streams.read(["a"], ["$"], 1, 0).args == (
        "XREAD", "BLOCK", 0, "COUNT", 1, "STREAMS", "a", "$")
    assert streams.entries_back("a", count=3).args == ("XREVRANGE", "a", "+", "-", "COUNT", 3)
    assert streams.pending_range("a", "g", 10, "c", min_idle_ms=7).args == (
        "XPENDING", "a", "g", "IDLE", 7, "-", "+", 10, "c")
    assert streams.add("a", {"f": 1}, maxlen=5).args == ("XADD", "a", "MAXLEN", "~", 5, "*",
                                                         "f", 1)
    assert streams.trim("a", minid="3-0", approximate=True).args == (
        "XTRIM", "a", "MINID", "~", "3-0")
    with pytest.raises(ValueError):
        streams.trim("a")


def test_what_the_runner_reads_of_a_command() -> None:
    """The keys a cluster client routes a read by, and redis-py's parse options."""
    assert streams.read_keys(streams.read_group("g", "c", ["a", "b"], 1).args) == ["a", "b"]
    assert streams.read_keys(streams.read(["a"], ["0-0"], 1, 5).args) == ["a"]
    assert streams.read_keys(("GET", "a")) is None
    with pytest.raises(ValueError):
        streams.read_keys(("XREAD", "COUNT", 1))
    assert streams.reply_options(streams.pending_range("a", "g", 1).args) == {
        "parse_detail": True}
    assert streams.reply_options(streams.pending_summary("a", "g").args) == {}
    assert streams.reply_options(streams.claim("a", "g", "c", 0, ["1-1"], True).args) == {
        "parse_justid": True}
    assert streams.reply_options(streams.length("a").args) == {}
