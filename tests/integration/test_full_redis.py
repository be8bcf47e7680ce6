"""Redis full (maxmemory reached, noeviction): a pause, never a loss. No script removes a job from
where it is unless its new place was written; operators can read, cancel and purge; a worker
whose registration changes nothing starts; once memory is freed every job is delivered."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.placement import fill_up, make_room, misplaced
from tests.support.redis_server import RedisServer
from tests.system.test_cli import cli_many

pytestmark = pytest.mark.timeout(120)


def promote(client: redis.Redis, keys: PartitionKeys, batch: int = 1000) -> list[object]:
    """One promoteDue call."""
    reply: list[object] = run_step_sync(client, script("promoteDue").call(keys.script_keys(),
                                                                           [batch]))
    return reply


def due_jobs(q: sd.Queue, n: int, topic: str = "t") -> list[str]:
    """n jobs due 50 ms from now; returns once they are due."""
    ids = [f"j{i}" for i in range(n)]
    q.enqueue_many(sd.JobSpec(topic, {"i": i, "pad": "x" * 200}, id=job_id, delay=0.05)
                   for i, job_id in enumerate(ids))
    time.sleep(0.1)
    return ids


@pytest.mark.core
def test_promote_under_oom_strands_nothing_and_resumes(own_redis: RedisServer) -> None:
    client = own_redis.client()
    q = sd.Queue("full", url=own_redis.url)
    keys = PartitionKeys("full", 0)
    ids = due_jobs(q, 400)
    fill_up(client)
    with pytest.raises(sd.StreamdelayError, match="maxmemory"):
        promote(client, keys)
    assert misplaced(client, keys, ["t"]) == {}
    assert client.zcard(keys.delayed) == 400
    assert q.stats().topics["t"].delayed == 400  # stats run under OOM too
    make_room(client)
    assert promote(client, keys)[0] == 400
    assert misplaced(client, keys, ["t"]) == {}
    assert sorted(f[b"id"].decode() for _, f in client.xrange(keys.stream("t"))) == sorted(ids)
    q.close()


def test_promote_stops_at_an_xadd_error_that_is_not_a_wrong_type(queue: sd.Queue) -> None:
    """A stream that can take no more entries (XSETID to the last id) stands for any XADD error
    other than WRONGTYPE (OOM, READONLY, cluster): the job stays delayed, nothing is lost."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("ok", id="a", delay=0.01)
    queue.enqueue("full", id="b", delay=0.02)
    queue.enqueue("ok", id="c", delay=0.03)
    client.xadd(keys.stream("full"), {"x": "1"})
    last = "18446744073709551615-18446744073709551615"
    client.execute_command("XSETID", keys.stream("full"), last)
    time.sleep(0.05)
    reply = promote(client, keys)
    assert reply[0] == 1  # 'a' moved; the batch stopped at 'b'
    assert client.zrange(keys.delayed, 0, -1) == [b"b", b"c"]
    with pytest.raises(sd.ScriptError, match="PROMOTE_FAILED"):
        promote(client, keys)
    assert client.hget(keys.jobs, "b")[:1] == b"d"
    client.delete(keys.stream("full"))
    assert promote(client, keys)[0] == 2
    assert misplaced(client, keys, ["ok", "full"]) == {}


@pytest.mark.core
def test_dispatcher_backs_off_under_oom_and_delivers_everything_after(
        own_redis: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    client = own_redis.client()
    q = sd.Queue("fullw", url=own_redis.url)
    keys = PartitionKeys("fullw", 0)
    ids = due_jobs(q, 200)
    fill_up(client)
    dispatcher = sd.Dispatcher(q.config)
    calls_before = int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    async def run() -> None:
        task = asyncio.create_task(dispatcher.run())
        await asyncio.sleep(1.5)
        assert misplaced(client, keys, ["t"]) == {}
        assert client.zcard(keys.delayed) == 200
        make_room(client)
        deadline = time.monotonic() + 20
        while client.zcard(keys.delayed) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        dispatcher.stop()
        await task
        await dispatcher.close()

    with caplog.at_level(logging.WARNING):
        asyncio.run(run())
    calls = int(client.info("commandstats")["cmdstat_evalsha"]["calls"]) - calls_before
    assert calls < 100, f"{calls} promoteDue calls in ~1.5 s of OOM: it spun"
    assert any("OOM" in r.getMessage() for r in caplog.records)
    assert misplaced(client, keys, ["t"]) == {}
    assert sorted(f[b"id"].decode() for _, f in client.xrange(keys.stream("t"))) == sorted(ids)
    q.close()


@pytest.mark.core
def test_operators_read_cancel_and_purge_while_redis_is_full(own_redis: RedisServer) -> None:
    client = own_redis.client()
    q = sd.Queue("ops", url=own_redis.url)
    keys = PartitionKeys("ops", 0)
    q.enqueue("t", 1, id="poison", max_attempts=1)
    worker = sd.Worker(q, block=0.05)
    worker.handler("t")(lambda job: (_ for _ in ()).throw(RuntimeError("boom")))
    worker.run(until_idle=True)
    q.enqueue("t", 1, id="later", delay=600)
    assert q.stats().topics["t"].dead == 1
    fill_up(client)
    # each command a new process (nothing cached), as an operator runs them
    reads = [["stats", "ops"], ["get", "ops", "later"], ["dead", "list", "ops"]]
    stats, get, dead = cli_many(reads, url=own_redis.url)
    assert (stats.returncode, get.returncode, dead.returncode) == (0, 0, 0), (
        stats.stderr, get.stderr, dead.stderr)
    assert "later" in get.stdout and "poison" in dead.stdout
    cancel, purge = cli_many([["cancel", "ops", "later"], ["dead", "purge", "ops"]],
                             url=own_redis.url)
    assert (cancel.returncode, purge.returncode) == (0, 0), (cancel.stderr, purge.stderr)
    assert client.hlen(keys.jobs) == 0 and client.zcard(keys.delayed) == 0
    make_room(client)
    q.close()


def test_read_commands_on_an_unknown_queue_say_so_and_write_nothing(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    name = f"nosuch{time.monotonic_ns()}"
    runs = cli_many([["stats", name], ["get", name, "x"], ["dead", "list", name]], url=redis_url)
    for run in runs:
        assert run.returncode == 1, run
        assert run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
        assert "no such queue" in run.stderr, run.stderr
    assert list(client.scan_iter(match=f"sd:{{{name}#*")) == []
    with pytest.raises(sd.NoSuchQueue, match="no such queue"):
        sd.Queue(name, url=redis_url).stats()
    assert list(client.scan_iter(match=f"sd:{{{name}#*")) == []


@pytest.mark.core
def test_worker_whose_registration_changes_nothing_starts_under_oom(
        own_redis: RedisServer) -> None:
    client = own_redis.client()
    q = sd.Queue("reg", url=own_redis.url)
    keys = PartitionKeys("reg", 0)
    register = script("registerGroup")
    run_step_sync(client, register.call(keys.script_keys(), ["g", "t"]))
    q.enqueue("t", 1, id="j", delay=0.05)
    time.sleep(0.1)
    run_step_sync(client, script("promoteDue").call(keys.script_keys(), [10]))
    fill_up(client)
    assert run_step_sync(client, register.call(keys.script_keys(), ["g", "t"])) == 1
    before = client.hgetall(keys.groups)
    with pytest.raises(sd.StreamdelayError, match="maxmemory"):  # a new topic must write: refused
        run_step_sync(client, register.call(keys.script_keys(), ["g", "t", "new"]))
    assert client.hgetall(keys.groups) == before
    assert not client.exists(keys.stream("new"))

    seen: list[str] = []
    worker = sd.Worker(sd.Queue("reg", url=own_redis.url), group="g", block=0.05)
    worker.handler("t")(lambda job: seen.append(job.id))

    async def serve() -> None:
        task = asyncio.create_task(worker.serve())
        deadline = time.monotonic() + 10
        while seen != ["j"] and time.monotonic() < deadline and not task.done():
            await asyncio.sleep(0.02)
        worker.stop()
        await asyncio.wait_for(task, 20)

    asyncio.run(serve())
    assert seen == ["j"]  # started, read and ran the job under OOM; its ack frees memory
    assert client.hlen(keys.jobs) == 0
    make_room(client)
    q.close()
