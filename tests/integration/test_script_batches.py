"""The batched hot scripts: ``enqueueJobs`` and ``promoteDue`` read and write a whole batch with
one command each (HMGET, HSET, ZADD), yet behave exactly as job-by-job; ``promoteDue`` reports
the server clock to the microsecond and the dispatcher sleeps exactly the gap it gives."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.dispatch.dispatcher import Dispatcher, PromoteResult
from streamdelay.io.config import QueueConfig
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import lua_dir, script

pytestmark = pytest.mark.timeout(60)
BLOB = b"\x92\xa1j\xc4\x02{}"


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly (EVALSHA with reload on NOSCRIPT)."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def job_args(job_id: str, delay_ms: int, replace: str = "0", topic: str = "t") -> list[Any]:
    """The eight enqueueJobs values of one job due ``delay_ms`` from now."""
    return [job_id, topic, "r", delay_ms, 60000, 3, replace, BLOB]


def server_us(client: redis.Redis) -> int:
    """The Redis server clock in epoch µs."""
    seconds, micros = client.time()
    return int(seconds) * 1_000_000 + int(micros)


def test_promote_reply_carries_the_server_clock_in_microseconds(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", id="later", delay=60)
    before = server_us(queue.client)
    reply = call(queue.client, "promoteDue", keys, [10])
    after = server_us(queue.client)
    moved, next_due, now, dropped, now_us = reply
    assert (moved, dropped) == (0, [])
    assert before <= now_us <= after
    assert now == now_us // 1000
    assert next_due == queue.get("later").due  # type: ignore[union-attr]


def test_dispatcher_sleeps_the_exact_gap_to_the_next_due_job() -> None:
    dispatcher = Dispatcher(QueueConfig("q", "redis://127.0.0.1:1"), batch=10, safety_tick=5.0)
    sleep = dispatcher._sleep_for
    assert sleep(PromoteResult(0, 1_000, 999, 999_250)) == pytest.approx(0.00075)
    assert sleep(PromoteResult(3, 1_002, 1_000, 1_000_999)) == pytest.approx(0.001001)
    assert sleep(PromoteResult(0, 1_000, 1_000, 1_000_400)) == 0.0  # never negative
    assert sleep(PromoteResult(10, 5_000, 1_000, 1_000_000)) == 0.0  # a full batch: go on
    assert sleep(PromoteResult(0, -1, 1_000, 1_000_000)) == 5.0  # nothing delayed
    assert sleep(PromoteResult(0, 60_000, 1_000, 1_000_000)) == 5.0  # capped by the tick
    # the server read its clock half a round trip before the reply: that half is gone already
    assert sleep(PromoteResult(0, 1_010, 1_000, 1_000_000, 0.002)) == pytest.approx(0.009)
    assert sleep(PromoteResult(0, 1_001, 1_000, 1_000_000, 3.0)) == 0.0  # a slow call: at once


def test_an_id_twice_in_one_call_sees_its_first_write(queue: sd.Queue) -> None:
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    head = [3_600_000, 0, "0"]
    kept = call(c, "enqueueJobs", keys, [*head, *job_args("a", 5000), *job_args("a", 9000)])
    assert isinstance(kept[0], int)  # created: its due time
    assert kept[1] == b"d:%d" % kept[0]  # the second reports the first's due time, changes nothing
    replaced = call(c, "enqueueJobs", keys, [*head, *job_args("b", 5000),
                                               *job_args("b", 9000, replace="1", topic="u")])
    assert isinstance(replaced[0], int) and replaced[1].startswith(b"d:")
    assert int(replaced[1][2:]) - replaced[0] == 4000
    assert c.zscore(keys.delayed, "b") == int(replaced[1][2:])
    assert c.zcard(keys.delayed) == 2
    assert c.hgetall(keys.counts) == {b"t": b"1", b"u": b"1"}
    assert queue.get("b").topic == "u"  # type: ignore[union-attr]


def test_batches_longer_than_one_bulk_piece(queue: sd.Queue) -> None:
    """1,100 jobs in one call: more than one piece of HMGET (HMGET_STEP) and HSET / ZADD
    (WRITE_STEP) values."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    args: list[Any] = [3_600_000, 0, "0"]
    for i in range(1100):
        args += job_args(f"j{i}", 0)
    assert all(isinstance(r, int) for r in call(c, "enqueueJobs", keys, args))
    assert all(r.startswith(b"d:") for r in call(c, "enqueueJobs", keys, args))
    assert c.zcard(keys.delayed) == 1100 and c.hget(keys.counts, "t") == b"1100"
    delayed = c.hget(keys.jobs, "j7")
    moved, next_due, _, dropped, _ = call(c, "promoteDue", keys, [1100])
    assert (moved, next_due, dropped) == (1100, -1, [])
    assert c.zcard(keys.delayed) == 0 and c.hget(keys.counts, "t") == b"0"
    entries = {f[b"id"]: (eid, f[b"rec"]) for eid, f in c.xrange(keys.stream("t"))}
    assert len(entries) == 1100
    entry, rec = entries[b"j7"]
    assert rec == delayed  # the entry carries the record as it was when delayed
    # promoted: the same record, state s and the entry id, everything else byte for byte
    fields = delayed.split(b"|", 8)  # type: ignore[union-attr]
    assert c.hget(keys.jobs, "j7") == b"|".join([b"s", *fields[1:6], entry, *fields[7:]])


def test_new_record_builds_what_build_record_builds(queue: sd.Queue) -> None:
    includes = lua_dir() / "includes"
    source = (includes / "build_record.lua").read_text() + (includes / "new_record.lua").read_text()
    source += """
local a = build_record({state = 'd', attempts = 0, due = tonumber(ARGV[1]),
  created = tonumber(ARGV[2]), ttr = tonumber(ARGV[3]), max = tonumber(ARGV[4]), entry = '',
  topic = ARGV[5], blob = ARGV[6]})
local b = new_record(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                     tonumber(ARGV[4]), ARGV[5], ARGV[6])
return {a, b}
"""
    cases = [
        (1795423312905, 1795423309905, 60000, 3, "t", BLOB),
        (1795423312905.5, 1795423309905, 1000.75, 1000, "a.b:c", b"\x00|\x00" * 3),
        (0, 0, 604800000, 1, "x", b""),
    ]
    for case in cases:
        built, new = queue.client.eval(source, 0, *case)
        assert new == built, case


def test_a_call_failing_half_way_writes_nothing(queue: sd.Queue) -> None:
    """Replacing a job whose topic key a foreign client overwrote fails that call before any
    write (WRONG_TYPE, checked first): the jobs before it in the call are not written either."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    head = [3_600_000, 0, "0"]
    call(c, "enqueueJobs", keys, [*head, *job_args("b", 9000)])
    c.hset(keys.jobs, "broken", b"s|0|1|1|60000|3|1-1|bad|" + BLOB)
    c.set(keys.stream("bad"), "not a stream")
    with pytest.raises(sd.ScriptError, match="t:bad holds a string"):
        call(c, "enqueueJobs", keys, [*head, *job_args("a", 5000),
                                        *job_args("b", 7000, replace="1", topic="u"),
                                        *job_args("broken", 0, replace="1")])
    assert c.zrange(keys.delayed, 0, -1) == [b"b"]
    assert c.hgetall(keys.counts) == {b"t": b"1"}
    assert queue.get("b").topic == "t"  # type: ignore[union-attr]
    assert c.hget(keys.jobs, "broken").startswith(b"s|")  # type: ignore[union-attr]
