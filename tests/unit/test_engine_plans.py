"""The consumer plans (``streamdelay/consume/core/``) against recorded replies, no Redis: the shared
take and its waits, the one reclaim over partitions and topics, the error map's Redis codes,
and the listing rows read by name."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from streamdelay.base.errors import GroupNotFound, StreamdelayError
from streamdelay.consume.core.consumer_core import take_now, take_wait
from streamdelay.consume.core.routing import LIMITED
from streamdelay.consume.core.taking import Entry, streams_of
from streamdelay.consume.core.upkeep_plans import reclaim_plan
from streamdelay.limits.limit_plans import CONCURRENCY, DRAINED, GOT_ALL, RATE
from streamdelay.protocol.keys import PartitionKeys, partition_keys
from streamdelay.protocol.plan import Command, Plan
from streamdelay.protocol.replies import parse_list
from streamdelay.protocol.script_errors import error_from_command
from streamdelay.protocol.scripts import ScriptCall
from tests.unit.test_replies import drive, name_of

KEYS = PartitionKeys("orders", 0)


class Taken(NamedTuple):
    entries: list[Entry]
    rest_s: float


def _round(block_ms: int) -> Plan[Taken]:
    """A driver's take of a limited topic: the core's take, then, when it gave none, its
    wait (``consumer_core.take_now`` / ``take_wait``)."""
    took = yield from take_now(LIMITED, KEYS, "g", "c", "t", 5)
    if took.entries or block_ms <= 0:
        return Taken(took.entries, 0.0)
    return Taken([], (yield from take_wait(LIMITED, [KEYS], "t", took, block_ms)))


def _take(reason: int, entries: list[Any], block_ms: int = 1000) -> tuple[Any, list[Any]]:
    reply = [entries, reason, 250, b"7-0"]
    return drive(_round(block_ms),
                 lambda step: reply if isinstance(step, ScriptCall) else None)


def test_a_take_that_got_nothing_waits_as_its_reply_says() -> None:
    taken, steps = _take(RATE, [])
    assert [name_of(s) for s in steps] == ["takeLimited"] and taken.rest_s == 0.25
    taken, steps = _take(CONCURRENCY, [])
    assert [name_of(s) for s in steps] == ["takeLimited", "BLPOP"] and taken.rest_s == 0
    assert isinstance(steps[1], Command) and steps[1].args[1] == KEYS.limit_wake("t")
    taken, steps = _take(DRAINED, [])
    assert [name_of(s) for s in steps] == ["takeLimited", "XREAD"]
    assert isinstance(steps[1], Command) and steps[1].args[-1] == "7-0"  # from the last id


def test_a_take_with_entries_or_no_time_to_wait_does_not_wait() -> None:
    taken, steps = _take(CONCURRENCY, [[b"1-0", [b"id", b"a"]]])
    assert len(steps) == 1 and taken.entries == [Entry(0, "t", "1-0", {b"id": b"a"})]
    taken, steps = _take(GOT_ALL, [], block_ms=0)
    assert len(steps) == 1 and taken.rest_s == 0


def test_streams_are_mapped_back_to_their_topic_by_name() -> None:
    keys = partition_keys("orders", 2)
    found = streams_of(keys, ["a:t:b", "c"])  # a topic may itself hold ":t:"
    assert found[keys[1].stream("a:t:b")] == (1, "a:t:b")
    assert len(found) == 4


def test_the_one_reclaim_walks_each_pair_and_records_a_gone_group() -> None:
    cursors = {"a": iter([[b"5-0", [b"j1"], [], 0], [b"0-0", [], [b"j2"], 1]])}

    def answer(step: Any) -> Any:
        topic = step.args[1]
        if topic == "gone":
            return GroupNotFound("group: no such consumer group on topic 'gone'")
        return next(cursors[topic])

    found, steps = drive(reclaim_plan("orders", 1, "g", ["a", "gone"]), answer)
    assert [s.args[1:3] for s in steps] == [("a", "-"), ("a", "5-0"), ("gone", "-")]
    assert found.count() == 2 and found.moved_ids == ["j1"] and found.dead_ids == ["j2"]
    assert list(found.gone) == [("gone", "g")] and found.cleaned == 1


@pytest.mark.parametrize(("message", "gone"), [
    ("NOGROUP No such key 'x' or consumer group 'g' in XREADGROUP with GROUP option", True),
    ("UNBLOCKED the stream key no longer exists", True),
    ("ERR wrong number of arguments for 'xreadgroup' command", False),
    ("ERR a message that mentions NOGROUP in passing", False),  # by code, not substring
])
def test_redis_error_codes_are_mapped_once(message: str, gone: bool) -> None:
    error = error_from_command("XREADGROUP", message)
    assert isinstance(error, StreamdelayError)
    assert isinstance(error, GroupNotFound) is gone


def test_listed_rows_are_read_by_name() -> None:
    reply = [1000, [b"7-0", b"t"], [b"5-0", b"t", b"job-1", b"rec", b"reserved", b"w1", 12, 2,
                                     b"boom"]]
    parsed = parse_list(reply)
    assert parsed.now_ms == 1000 and parsed.reached == (b"7-0", b"t")
    [row] = parsed.rows
    assert (row.job_id, row.job.substate, row.job.owner, row.job.idle_ms, row.job.deliveries,
            row.job.error) == ("job-1", "reserved", "w1", 12, 2, "boom")
    assert parse_list([5, [], ]).reached is None
