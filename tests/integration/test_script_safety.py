"""Script contracts beyond the happy path: a call that fails writes nothing (foreign keys of the
wrong type), due times never early to the microsecond, batches bounded by bytes, and keep_done
tombstones that expire at any rate."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.placement import misplaced

pytestmark = pytest.mark.timeout(120)


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def snapshot(client: redis.Redis, keys: PartitionKeys) -> dict[str, bytes | None]:
    """Every key of the partition, dumped (what a failed call must leave exactly as it was)."""
    return {k.decode(): client.dump(k) for k in sorted(client.scan_iter(match=keys.prefix + "*"))}


# --- item: a key of the wrong type -----------------------------------------------------------

@pytest.mark.parametrize("key", ["delayed", "wake", "counts", "done", "groups"])
def test_enqueue_with_a_foreign_key_of_the_wrong_type_writes_nothing(
        queue: sd.Queue, key: str) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", 1, id="first", delay=60)
    client.set(getattr(keys, key), "foreign")
    before = snapshot(client, keys)
    args = [3_600_000, 60_000, "0", "new", "t", "r", 1000, 60_000, 3, "0", b"\x92\xa1j\xc4\x01"]
    with pytest.raises(sd.ScriptError) as refused:
        call(client, "enqueueJobs", keys, args)
    assert snapshot(client, keys) == before
    assert f"key {getattr(keys, key)} holds a string" in str(refused.value)
    client.delete(getattr(keys, key))
    if key == "delayed":
        client.zadd(keys.delayed, {"first": 1})
    assert isinstance(call(client, "enqueueJobs", keys, args)[0], int)  # nothing half-written


def test_failing_with_a_foreign_dead_letter_key_writes_nothing(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "registerGroup", keys, ["g", "t"])
    queue.enqueue("t", 1, id="j", max_attempts=1)
    time.sleep(0.02)
    call(client, "promoteDue", keys, [10])
    [[_, [(eid, _)]]] = client.xreadgroup("g", "c", {keys.stream("t"): ">"})
    client.set(keys.dead("t"), "foreign")
    before = snapshot(client, keys)
    with pytest.raises(sd.ScriptError) as refused:
        call(client, "failJob", keys, ["g", "t", "j", eid, 0, "1", "boom", 0])
    assert snapshot(client, keys) == before
    assert f"key {keys.dead('t')} holds a string" in str(refused.value)


# --- item: due time to the microsecond ------------------------------------------------------

def test_relative_delay_is_counted_from_the_microsecond_and_rounded_up(queue: sd.Queue) -> None:
    """due_ms * 1000 >= (server µs before the enqueue) + delay: never due early, even by < 1 ms."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    enqueue = script("enqueueJobs")
    client.script_load(enqueue.source)
    delay_ms = 5
    samples = []
    for i in range(40):
        pipe = client.pipeline(transaction=True)
        pipe.time()
        pipe.evalsha(enqueue.sha, 6, *keys.script_keys(), 3_600_000, 0, "0", f"j{i}", "t", "r",
                     delay_ms, 60_000, 3, "0", b"\x92\xa1j\xc4\x01")
        (seconds, micros), [due_ms] = pipe.execute()
        assert isinstance(due_ms, int)  # created
        samples.append((seconds * 1_000_000 + micros, int(due_ms)))
    early = [(before, due) for before, due in samples if due * 1000 < before + delay_ms * 1000]
    assert early == []
    time.sleep(0.02)
    call(client, "promoteDue", keys, [100])
    for entry_id, fields in client.xrange(keys.stream("t")):
        job_id = fields[b"id"].decode()
        promoted_ms = int(entry_id.split(b"-")[0])  # server clock of the XADD, in ms
        assert promoted_ms >= samples[int(job_id[1:])][1]


def test_retry_due_is_rounded_up_from_the_microsecond(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "registerGroup", keys, ["g", "t"])
    fail = script("failJob")
    client.script_load(fail.source)
    early = []
    for i in range(20):
        queue.enqueue("t", 1, id=f"r{i}")
    time.sleep(0.02)
    call(client, "promoteDue", keys, [100])
    for _, entries in client.xreadgroup("g", "c", {keys.stream("t"): ">"}):
        for eid, fields in entries:
            pipe = client.pipeline(transaction=True)
            pipe.time()
            pipe.evalsha(fail.sha, 6, *keys.script_keys(), "g", "t", fields[b"id"], eid, 3, "0",
                         "err", 0)
            (seconds, micros), reply = pipe.execute()
            if int(reply[1]) * 1000 < seconds * 1_000_000 + micros + 3000:
                early.append(reply)
    assert early == []


# --- item: batches bounded by bytes ---------------------------------------------------------

def test_promote_stops_at_about_a_mebibyte_but_always_moves_one(redis_url: str,
                                                                queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url, max_body_bytes=2_000_000)
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    big = "x" * 400_000
    queue.enqueue_many(sd.JobSpec("t", big, id=f"b{i}", delay=0.01) for i in range(5))
    queue.enqueue("t", "y" * 1_100_000, id="huge", delay=0.02)
    time.sleep(0.05)
    moved = [call(client, "promoteDue", keys, [100])[0] for _ in range(4)]
    assert moved == [2, 2, 1, 1]  # 2 x 400 kB fit under 1 MiB, a third does not; huge goes alone
    assert client.zcard(keys.delayed) == 0
    assert misplaced(client, keys, ["t"]) == {}


def test_replay_stops_at_about_a_mebibyte_and_the_caller_goes_on(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "registerGroup", keys, ["g", "t"])
    queue.enqueue_many(sd.JobSpec("t", "x" * 400_000, id=f"d{i}", max_attempts=1)
                       for i in range(5))
    time.sleep(0.02)
    while call(client, "promoteDue", keys, [100])[0]:
        pass
    for _, entries in client.xreadgroup("g", "c", {keys.stream("t"): ">"}):
        for eid, fields in entries:
            call(client, "failJob", keys, ["g", "t", fields[b"id"], eid, 0, "1", "boom", 0])
    assert len(call(client, "replayDead", keys, ["t", 100, 60_000, ""])) == 2
    assert queue.dead_replay() == 3
    assert misplaced(client, keys, ["t"]) == {}


# --- item: keep_done tombstones ---------------------------------------------------------------

def test_tombstones_expire_at_any_rate(own_redis: Any) -> None:
    """20,000 jobs acknowledged with keep_done 50 ms: every record and tombstone is gone after."""
    client = own_redis.client()
    keys = PartitionKeys("tomb", 0)
    q = sd.Queue("tomb", url=own_redis.url, keep_done=0.05)
    baseline = int(client.info("memory")["used_memory"])
    call(client, "registerGroup", keys, ["g", "t"])
    n = 20_000
    for start in range(0, n, 2000):
        q.enqueue_many(sd.JobSpec("t", i, id=f"k{i}") for i in range(start, start + 2000))
    time.sleep(0.02)
    while call(client, "promoteDue", keys, [1000])[0]:
        pass
    while True:
        read = client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=500)
        if not read:
            break
        flat: list[Any] = []
        for eid, fields in read[0][1]:
            flat += ["t", fields[b"id"], eid]
        call(client, "ackJobs", keys, ["g", 50, len(flat) // 3, *flat, 0])
    time.sleep(0.1)
    call(client, "promoteDue", keys, [1000])  # the dispatcher's sweep
    left = (client.hlen(keys.jobs), client.zcard(keys.done))
    deadline = time.monotonic() + 10
    while left != (0, 0) and time.monotonic() < deadline:
        reply = call(client, "promoteDue", keys, [1000])
        left = (client.hlen(keys.jobs), client.zcard(keys.done))
        if left != (0, 0):  # the sweep asks to be called again while tombstones are left
            assert 0 <= int(reply[1]) <= int(reply[2])
    assert left == (0, 0)
    client.delete(keys.stream("t"))
    assert int(client.info("memory")["used_memory"]) < baseline + 2_000_000
    q.close()
