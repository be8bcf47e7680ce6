"""The Lua protocol on a real server (its pure checks: tests/unit/test_scripts.py): loading by
SHA, NOSCRIPT recovery after SCRIPT FLUSH (single calls, enqueue_many pipelines, every call a
worker makes), and scripts that are safe to run twice
(redis-py may resend a call after a timeout)."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import load_scripts, lua_dir, script

pytestmark = pytest.mark.timeout(60)


def server_ms(client: redis.Redis) -> int:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly (EVALSHA with reload on NOSCRIPT)."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


# --- the files -------------------------------------------------------------------------------



def test_includes_are_inlined_and_the_sha_is_what_redis_computes(queue: sd.Queue) -> None:
    includes = lua_dir() / "includes"
    for path in lua_dir().glob("*.lua"):  # the one-level recipe of docs/keys.md
        recipe = re.sub(r"^-- @include ([a-z_]+)\s*$",
                        lambda m: (includes / f"{m.group(1)}.lua").read_text(),
                        path.read_text(), flags=re.MULTILINE)
        assert load_scripts()[path.stem.split("-")[0]].source == recipe, path.name
    for loaded in load_scripts().values():
        assert queue.client.script_load(loaded.source) == loaded.sha




# --- NOSCRIPT recovery -----------------------------------------------------------------------

def test_every_queue_operation_survives_script_flush(queue: sd.Queue) -> None:
    flush = queue.client.script_flush
    keys = PartitionKeys(queue.name, 0)
    flush()
    assert queue.enqueue("t", 1, id="a", delay=600).created
    flush()
    results = queue.enqueue_many(sd.JobSpec("t", i, id=f"m{i}", delay=600) for i in range(600))
    assert len(results) == 600 and all(r.created for r in results)
    flush()
    assert queue.get("a") is not None
    flush()
    assert queue.reschedule("a", delay=0) is True
    flush()
    assert queue.stats().topics["t"].delayed == 601
    flush()
    assert queue.cancel("m0") is True
    queue.enqueue("t", id="poison", max_attempts=1)

    worker = sd.Worker(queue, block=0.05, dispatch=False)
    worker.handler("t")(lambda job: None)

    async def register() -> None:
        try:
            await worker.register()
        finally:
            await worker.client.aclose()

    flush()
    asyncio.run(register())

    async def promote() -> int:
        dispatcher = sd.Dispatcher(queue.config)
        try:
            return (await dispatcher.promote_once(keys)).moved
        finally:
            await dispatcher.close()

    flush()
    assert asyncio.run(promote()) == 2
    queue.client.xreadgroup("workers", "c1", {keys.stream("t"): ">"}, count=1)
    flush()
    assert queue.claim("workers", min_idle=0, to="c2").moved == ["a"]
    flush()
    assert queue.get("a").consumer == "c2"  # type: ignore[union-attr]
    assert call(queue.client, "requeueStuck", keys,
                ["workers", "t", "-", 10, 0, ""])[1] == [b"a"]
    flush()
    replies = call(queue.client, "failJob", keys, ["workers", "t", "a", "0-1", 0, "1", "x", 0])
    assert replies == [0]  # a stale entry id: nothing happens, but the script ran


def test_async_queue_survives_script_flush(queue: sd.Queue) -> None:
    flush = queue.client.script_flush

    async def scenario() -> None:
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as aq:
            flush()
            assert (await aq.enqueue("t", id="x", delay=600)).created
            flush()
            many = await aq.enqueue_many(sd.JobSpec("t", i, delay=600) for i in range(500))
            assert len(many) == 500
            flush()
            assert (await aq.get("x")) is not None
            flush()
            assert (await aq.stats()).topics["t"].delayed == 501
            flush()
            assert await aq.cancel("x")

    asyncio.run(scenario())


def test_pipeline_survives_a_flush_between_its_calls(queue: sd.Queue) -> None:
    """Each EVALSHA of a pipeline is answered on its own; NOSCRIPT ones are re-run."""
    flushing = threading.Event()
    stop = threading.Event()
    flusher = redis.Redis.from_url(queue.config.url)

    def keep_flushing() -> None:
        flushing.set()
        while not stop.is_set():
            flusher.script_flush()
            time.sleep(0.0005)

    thread = threading.Thread(target=keep_flushing)
    thread.start()
    flushing.wait()
    try:
        for round_ in range(10):
            results = queue.enqueue_many(
                sd.JobSpec("t", i, id=f"r{round_}-{i}", delay=600) for i in range(600))
            assert all(r.created for r in results)
    finally:
        stop.set()
        thread.join()
        flusher.close()
    assert queue.client.zcard(PartitionKeys(queue.name, 0).delayed) == 6000


def test_worker_rides_out_script_flushes_on_every_call(queue: sd.Queue) -> None:
    """Register, promote, read, heartbeat, ack, fail, reclaim: each after a SCRIPT FLUSH."""
    flusher = redis.Redis.from_url(queue.config.url)
    flusher.script_flush()
    queue.enqueue_many([sd.JobSpec("t", {"i": i}, id=f"w{i}", ttr=1) for i in range(20)])
    queue.enqueue("t", {"retry": True}, id="again", ttr=1)
    worker = sd.Worker(queue, block=0.05, reclaim_interval=0.1)
    handled: list[tuple[str, int]] = []

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        flusher.script_flush()
        handled.append((job.id, job.attempt))
        if job.id == "w0":
            await asyncio.sleep(0.6)  # past ttr/3: heartbeats run after a flush too
        if job.id == "again" and job.attempt == 1:
            raise sd.Retry(delay=0.05)

    worker.run(until_idle=True)
    assert sorted(handled) == sorted([(f"w{i}", 1) for i in range(20)]
                                     + [("again", 1), ("again", 2)])
    assert worker.counts["handled"] == 21 and worker.counts["retried"] == 1
    assert queue.client.hlen(PartitionKeys(queue.name, 0).jobs) == 0
    flusher.close()


# --- retry safety ----------------------------------------------------------------------------

def test_scripts_run_twice_change_nothing_the_second_time(queue: sd.Queue) -> None:
    c = queue.client
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", id="j1")
    queue.enqueue("t", id="j2", max_attempts=1)
    last = queue.enqueue("t", id="j3")
    call(c, "registerGroup", keys, ["workers", "t"])
    assert call(c, "registerGroup", keys, ["workers", "t"]) == 1
    while server_ms(c) < last.due:  # due the next ms: these calls can all fit in one
        time.sleep(0.001)
    first = call(c, "promoteDue", keys, [100])
    again = call(c, "promoteDue", keys, [100])
    assert (first[0], again[0]) == (3, 0)
    read = c.xreadgroup("workers", "c1", {keys.stream("t"): ">"}, count=10)
    entry = {f[b"id"].decode(): eid.decode() for eid, f in read[0][1]}
    ack = ["workers", 0, 1, "t", "j1", entry["j1"], 0]
    assert call(c, "ackJobs", keys, ack) == 1
    assert call(c, "ackJobs", keys, ack) == 0
    fail = ["workers", "t", "j2", entry["j2"], 0, "0", "boom", 0]
    assert call(c, "failJob", keys, fail)[0] == 2
    assert call(c, "failJob", keys, fail) == [0]
    assert c.xlen(keys.dead("t")) == 1
    assert call(c, "cancelJob", keys, ["j3", 0]) == 1
    assert call(c, "cancelJob", keys, ["j3", 0]) == 0
    assert call(c, "replayDead", keys, ["t", 10, 0, ""]) == [b"j2"]
    assert call(c, "replayDead", keys, ["t", 10, 0, ""]) == []
    now = server_ms(c)
    first_due = call(c, "rescheduleJob", keys, ["j2", "a", now + 5000, 0])
    assert call(c, "rescheduleJob", keys, ["j2", "a", now + 5000, 0]) == first_due
    assert c.zcard(keys.delayed) == 1 and c.hget(keys.counts, "t") == b"1"
    assert c.xlen(keys.stream("t")) == 0 and c.hlen(keys.jobs) == 1


def test_enqueue_script_rejects_malformed_arguments(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        call(queue.client, "enqueueJobs", keys, [0, 0, "0", "id", "t", "r"])
    assert queue.client.exists(keys.jobs, keys.delayed) == 0
