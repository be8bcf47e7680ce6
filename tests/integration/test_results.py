"""Results (docs/results.md): a handler's return value kept by the settling script for
``keep_result``, dead and cancelled ends kept too, read and awaited with ``Queue.result``
(woken by the settle script, never a poll loop), across a Redis restart."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.result_codec import encode_result, result_key, wake_key
from streamdelay.protocol.scripts import script
from tests.integration.test_pull import running_dispatcher
from tests.integration.test_script_safety import call
from tests.support.redis_server import RedisServer
from tests.system import test_docs_examples as docs_examples

pytestmark = pytest.mark.timeout(120)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example


def run_worker(q: sd.Queue, handler: Callable[[sd.Job], Any], topic: str = "t") -> sd.Worker:
    """Run a worker of ``topic`` until the queue is idle."""
    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler(topic)(handler)
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
    return worker


def test_a_return_value_is_the_result_for_keep_result(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        q.enqueue("t", {"n": 2}, id="sync")
        q.enqueue("t", {"n": 3}, id="short", keep_result=3)
        q.enqueue("t", {"n": 4}, id="forgot", keep_result=0)
        q.enqueue_many([sd.JobSpec("t", {"n": 5}, id="spec", keep_result=120)])
        run_worker(q, lambda job: {"twice": job.body["n"] * 2})
        found = q.result("sync")
        assert found is not None and found.state == "succeeded"
        assert found.value == {"twice": 4} and found.error is None
        assert abs(found.finished - time.time() * 1000) < 30_000
        assert q.result("spec").value == {"twice": 10}  # type: ignore[union-attr]
        assert q.result("forgot") is None  # not kept: the id is unknown once done
        # 3 s, not less: the worker's idle check ends some time after this job's ack
        assert q.result("short").value == {"twice": 6}  # type: ignore[union-attr]
        ttl = q.client.pttl(result_key(PartitionKeys(queue_name, 0), "spec"))
        assert 110_000 < ttl <= 120_000
        left = q.client.pttl(result_key(PartitionKeys(queue_name, 0), "short"))
        assert 0 < left <= 3000
        time.sleep(left / 1000 + 0.05)
        assert q.result("short") is None  # gone on time
        assert q.result("never-seen") is None


def test_async_handlers_and_async_queue(redis_url: str, queue_name: str) -> None:
    async def handler(job: sd.Job) -> list[int]:
        await asyncio.sleep(0)
        return [job.body, job.body]

    async def main() -> None:
        async with sd.AsyncQueue(queue_name, url=redis_url, keep_result=60) as aq:
            await aq.enqueue("t", 7, id="a1")
            worker = sd.Worker(aq, group="g", block=0.2)
            worker.handler("t")(handler)
            waiting = asyncio.ensure_future(aq.result("a1", timeout=20))
            await asyncio.wait_for(worker.serve(until_idle=True), 60)
            found = await waiting
            assert found is not None and found.value == [7, 7]
            assert (await aq.result("a1")) == found

    asyncio.run(main())


def test_dead_and_cancelled_jobs_have_results(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        q.enqueue("t", 1, id="poison", max_attempts=1)
        q.enqueue("t", 1, id="big", max_attempts=1)
        q.enqueue("later", 1, id="cancelled", delay=600)

        def handle(job: sd.Job) -> Any:
            if job.id == "big":
                return "x" * (70 << 10)  # over the default max_result_bytes (64 KiB)
            raise RuntimeError("poisoned on purpose")

        run_worker(q, handle)
        dead = q.result("poison")
        assert dead is not None and dead.state == "dead" and dead.value is None
        assert "poisoned on purpose" in (dead.error or "")
        big = q.result("big")
        assert big is not None and big.state == "dead"
        assert "71682 bytes encoded is over max_result_bytes=65536" in (big.error or "")
        assert q.get("big").state == "dead"  # type: ignore[union-attr]
        assert q.cancel("cancelled") is True
        gone = q.result("cancelled")
        assert gone is not None and gone.state == "cancelled" and gone.error == "cancelled"


def test_results_of_reservations(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q, running_dispatcher(q):
        q.enqueue("p", 1, id="ok")
        q.enqueue("p", 2, id="bad")
        taken = {r.id: r for r in q.reserve("p", wait=5, count=2)}
        while len(taken) < 2:
            taken.update({r.id: r for r in q.reserve("p", wait=5, count=2)})
        rebuilt = q.reservation(taken["ok"].receipt)  # another process settles it
        small = sd.Queue(queue_name, url=redis_url, max_result_bytes=10)
        with pytest.raises(sd.ValidationError, match="over max_result_bytes=10"):
            small.reservation(taken["ok"].receipt).ack("x" * 50)  # nothing written
        small.close()
        rebuilt.ack({"paid": True})
        assert taken["bad"].fail("no", dead=True) == "dead"
        assert q.result("ok").value == {"paid": True}  # type: ignore[union-attr]
        assert q.result("bad").error == "no"  # type: ignore[union-attr]


def test_a_waiter_is_woken_by_the_settle_and_a_late_one_reads_it(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        q.enqueue("t", 1, id="w1")
        got: list[Any] = []

        def wait() -> None:
            got.append(q.result("w1", timeout=30))

        waiters = [threading.Thread(target=wait) for _ in range(3)]  # one job, three waiters
        for waiter in waiters:
            waiter.start()
        time.sleep(0.3)
        before = q.client.info("commandstats").get("cmdstat_blmove", {}).get("calls", 0)
        run_worker(q, lambda job: "done")
        for waiter in waiters:
            waiter.join(10)
        assert [r.value for r in got] == ["done"] * 3
        # each waiter blocked once (no poll loop); the one push woke all three
        calls = q.client.info("commandstats")["cmdstat_blmove"]["calls"]
        assert calls - before <= 3
        start = time.monotonic()
        assert q.result("w1", timeout=30).value == "done"  # type: ignore[union-attr]
        assert time.monotonic() - start < 0.5  # a late waiter: at once


def test_wait_timeouts_and_bad_timeouts(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        q.enqueue("t", 1, id="slow", delay=600)
        start = time.monotonic()
        with pytest.raises(sd.ResultTimeout, match=r"did not end within 0\.3 s"):
            q.result("slow", timeout=0.3)
        assert 0.28 < time.monotonic() - start < 3
        with pytest.raises(sd.ResultTimeout, match="has not ended"):
            q.result("slow")
        for bad in (-1, float("nan"), 10**9, "5"):
            with pytest.raises(sd.ValidationError) as refused:
                q.result("slow", timeout=bad)  # type: ignore[arg-type]
            assert refused.value.field == "timeout"
        assert q.result("unknown", timeout=5) is None  # unknown: at once, no wait


def test_results_expire_on_time_at_any_rate(own_redis: RedisServer) -> None:
    """20,000 results kept 50 ms, acknowledged in batches of 500: none is readable after its
    time, and Redis forgets them all (their memory is back) without any sweep of ours."""
    client = own_redis.client()
    keys = PartitionKeys("res", 0)
    q = sd.Queue("res", url=own_redis.url)
    baseline = int(client.info("memory")["used_memory"])
    call(client, "registerGroup", keys, ["g", "t"])
    n, value = 20_000, encode_result({"ok": True, "pad": "x" * 100}, "json", 1 << 16)
    for start in range(0, n, 2000):
        q.enqueue_many(sd.JobSpec("t", i, id=f"k{i}", keep_result=0.05)
                       for i in range(start, start + 2000))
    time.sleep(0.02)
    while call(client, "promoteDue", keys, [1000])[0]:
        pass
    while True:
        read = client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=500)
        if not read:
            break
        args: list[Any] = ["g", 0, len(read[0][1])]
        results: list[Any] = []
        for position, (eid, fields) in enumerate(read[0][1], 1):
            args += ["t", fields[b"id"], eid]
            results += [position, 50, value]
        # the ack and a read of its last result in one MULTI: the result is there when its ack
        # ends, however long a loaded machine takes to the next command (50 ms here)
        ack = script("ackJobs")
        client.script_load(ack.source)
        with client.pipeline(transaction=True) as pipe:
            pipe.evalsha(ack.sha, len(keys.script_keys()), *keys.script_keys(), *args, 0, *results)
            pipe.get(result_key(keys, fields[b"id"].decode()))
            acked, kept = pipe.execute()
        assert acked == len(read[0][1]) and kept is not None
    time.sleep(0.06)
    assert all(v is None for v in client.mget([result_key(keys, f"k{i}") for i in range(n)]))
    assert all(v is None for v in client.mget([wake_key(keys, f"k{i}") for i in range(0, n, 7)]))
    deadline = time.monotonic() + 10
    while client.dbsize() > 10 and time.monotonic() < deadline:
        time.sleep(0.1)  # Redis's active expiry reclaims what nobody reads
    assert client.dbsize() <= 10 and client.hlen(keys.jobs) == 0
    client.delete(keys.stream("t"))
    assert int(client.info("memory")["used_memory"]) < baseline + 2_000_000
    q.close()


def test_a_waiter_re_arms_across_a_redis_restart(durable_redis: RedisServer) -> None:
    q = sd.Queue("restart", url=durable_redis.url, keep_result=60, retry_for=30)
    q.enqueue("t", {"n": 1}, id="survivor")
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(q.result("survivor", timeout=60)))
    waiter.start()
    time.sleep(0.5)
    durable_redis.kill()
    time.sleep(0.5)
    durable_redis.start()
    time.sleep(0.5)
    assert waiter.is_alive() and not got  # still waiting: nothing ended yet
    run_worker(q, lambda job: {"n": job.body["n"], "after": "restart"})
    waiter.join(20)
    assert got and got[0].value == {"n": 1, "after": "restart"}
    assert got[0].id == "survivor" and got[0].state == "succeeded"
    q.close()


def test_cli_result(redis_url: str, queue_name: str) -> None:
    from tests.system.test_cli import cli

    assert cli("enqueue", queue_name, "t", '{"n": 1}', "--id", "c1", "--keep-result", "1m",
               url=redis_url).returncode == 0
    waited = cli("result", queue_name, "c1", "--wait", "250ms", url=redis_url)
    assert waited.returncode == 3 and "did not end within 0.25 s" in waited.stderr
    assert cli("result", queue_name, "c1", url=redis_url).returncode == 3
    with sd.Queue(queue_name, url=redis_url) as q:
        run_worker(q, lambda job: {"seen": job.body["n"]})
    shown = cli("result", queue_name, "c1", "--wait", "30s", "--json", url=redis_url)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["value"] == {"seen": 1}
    text = cli("result", queue_name, "c1", url=redis_url)
    assert "succeeded" in text.stdout and '{"seen":1}' in text.stdout.replace(" ", "")
    unknown = cli("result", queue_name, "nobody", url=redis_url)
    assert unknown.returncode == 1 and "no job 'nobody'" in unknown.stderr
    assert cli("result", queue_name, "c1", "--wait", "-1s", url=redis_url).returncode == 2


def test_the_results_example_runs(example_env: dict[str, str]) -> None:
    assert run_example("results.py", example_env).splitlines() == [
        "waited: succeeded {'month': '2025-01', 'rows': 42}",
        "dead: dead ValueError: no such month",
        "cancelled: cancelled",
        "unknown: None",
    ]


@pytest.mark.parametrize("value, why", [
    ({"ratio": float("nan")}, "nan is not valid JSON"),
    ([1, float("inf")], "inf is not valid JSON"),
    (object(), "cannot be encoded as json"),
    ("x" * 70_000, "70002 bytes encoded is over max_result_bytes=65536"),
])
def test_bad_results_are_refused_with_the_field_named(value: Any, why: str) -> None:
    with pytest.raises(sd.ValidationError, match=why) as refused:
        encode_result(value, "json", 64 << 10)
    assert refused.value.field == "result"
    assert encode_result({"fine": None}, "json", 64 << 10) == b'j{"fine":null}'


def test_a_cancel_keeps_the_jobs_own_keep_result(redis_url: str, queue_name: str) -> None:
    """The envelope's keep_result wins over the cancelling queue's (a delayed job, and a ready
    one of layout 2 whose body lives only in its stream entry)."""
    with sd.Queue(queue_name, url=redis_url) as q, running_dispatcher(q):  # keep_result 0
        q.enqueue("t", 1, id="later", delay=600, keep_result=60)
        q.migrate()  # layout 2: a ready job's record is header-only
        q.enqueue("t", 2, id="ready", keep_result=60)
        q.enqueue("t", 3, id="plain", delay=600)
        deadline = time.monotonic() + 10
        while q.get("ready").state != "ready":  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert q.cancel("later") and q.cancel("ready") and q.cancel("plain")
        assert q.result("later").state == "cancelled"  # type: ignore[union-attr]
        assert q.result("ready").state == "cancelled"  # type: ignore[union-attr]
        assert q.result("plain") is None  # neither the job nor the queue keeps results
