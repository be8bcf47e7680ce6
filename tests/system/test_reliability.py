"""At-least-once delivery, proven with real worker processes on a real redis-server.

Each test starts workers of ``tests/support/apps/reliability_app.py`` as subprocesses, kills or
signals
them for real, and reads what every handler run recorded (job id, attempt, pid, time) to count
runs per job. Figures worth keeping are printed as ``MEASURED ...`` lines (``pytest -s``);
docs/reliability.md quotes them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import partition_keys
from tests.support.apps.reliability_app import TOPICS, Workers, count, wait_for
from tests.support.promoting import promote_due
from tests.support.redis_server import RedisServer


@pytest.mark.core
def test_killed_worker_jobs_finish_on_another_worker_after_ttr(
        workers: Workers, q: sd.Queue) -> None:
    ttr = 3.0
    first = workers.start("a", "--ttr", str(ttr))
    first.wait_ready()
    ids = [r.id for r in q.enqueue_many(
        [sd.JobSpec("slow", {"seconds": 30}, id=f"s{i}", ttr=ttr) for i in range(20)])]
    wait_for(lambda: len(count(workers.events(), "start", first.pid)) == 20, 20, "20 starts on a")
    second = workers.start("b", "--sleep-cap", "0.5")
    second.wait_ready()
    killed_at = first.signal(signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    wait_for(lambda: len(count(workers.events(), "done", second.pid)) == 20, ttr + 20,
             "20 jobs done on b")
    events = workers.events()
    on_second = [e for e in events if e.pid == second.pid and e.ev == "start"]
    assert sorted(e.id for e in on_second) == sorted(ids)  # each exactly once on b
    assert {e.attempt for e in on_second} == {2}  # the crashed delivery counted as an attempt
    redelivery = sorted(e.t - killed_at for e in on_second)
    assert redelivery[0] >= ttr * 2 / 3 - 0.5  # not taken from a silent consumer before its ttr
    assert redelivery[-1] <= ttr + 10
    assert all(q.get(job_id) is None for job_id in ids)
    print(f"MEASURED kill -9 redelivery (ttr {ttr:g}s): min {redelivery[0]:.2f}s "
          f"median {statistics.median(redelivery):.2f}s max {redelivery[-1]:.2f}s; "
          f"runs on the surviving worker per job: 1")


def test_slow_handler_kept_alive_by_heartbeats_runs_exactly_once(
        workers: Workers, q: sd.Queue) -> None:
    pair = [workers.start("a"), workers.start("b")]
    for worker in pair:
        worker.wait_ready()
    q.enqueue("slow", {"seconds": 5}, id="long", ttr=2)
    wait_for(lambda: count(workers.events(), "done")["long"], 30, "the slow job to finish")
    time.sleep(2.5)  # a wrongful reclaim would start a second run about now
    events = workers.events()
    assert [(e.ev, e.attempt) for e in events if e.id == "long"] == [("start", 1), ("done", 1)]
    assert q.get("long") is None


@pytest.mark.core
def test_flaky_succeeds_on_third_attempt_and_poison_goes_dead_then_replays(
        workers: Workers, q: sd.Queue) -> None:
    q.enqueue("flaky", {"succeed_on": 3}, id="flaky", max_attempts=5, backoff=[0.05])
    q.enqueue("poison", {}, id="pill", max_attempts=4, backoff=[0.05, 0.1])
    assert workers.start("a", "--until-idle").wait(60) == 0
    events = workers.events()
    assert [e.attempt for e in events if e.id == "flaky" and e.ev == "start"] == [1, 2, 3]
    assert [e.attempt for e in events if e.id == "flaky" and e.ev == "done"] == [3]
    assert q.get("flaky") is None
    assert [e.attempt for e in events if e.id == "pill"] == [1, 2, 3, 4]
    info = q.get("pill")
    assert info is not None and info.state == "dead" and info.attempts == 4
    [dead] = q.dead_list("poison")
    assert (dead.id, dead.attempts) == ("pill", 4)
    assert dead.error.startswith("ValueError: poison pill pill cannot be handled\n")
    assert "Traceback (most recent call last)" in dead.error
    assert 'raise ValueError(f"poison pill' in dead.error  # the raising line of the handler

    assert q.dead_replay("poison", id="pill") == 1
    replayed = q.get("pill")
    assert replayed is not None and replayed.state in ("delayed", "ready")
    assert replayed.attempts == 0
    assert q.dead_list("poison") == []
    assert workers.start("b", "--until-idle").wait(60) == 0
    runs = [e.attempt for e in workers.events() if e.id == "pill"]
    assert runs == [1, 2, 3, 4, 1, 2, 3, 4]
    assert [d.attempts for d in q.dead_list("poison")] == [4]


def test_body_failing_its_struct_type_goes_dead_at_once(workers: Workers, q: sd.Queue) -> None:
    q.enqueue("typed", {"order_id": "forty-two", "amount": 1.5}, id="bad", max_attempts=5)
    q.enqueue("typed", {"order_id": 42, "amount": 1.5}, id="good")
    assert workers.start("a", "--until-idle").wait(60) == 0
    events = workers.events()
    assert [(e.id, e.ev) for e in events if e.id] == [("good", "start"), ("good", "done")]
    info = q.get("bad")
    assert info is not None and info.state == "dead" and info.attempts == 1
    [dead] = q.dead_list("typed")
    assert dead.id == "bad" and dead.attempts == 1
    assert dead.error.startswith("BodyDecodeError: body: Expected `int`, got `str`")
    assert "$.order_id" in dead.error


def test_retry_drop_and_handler_timeout(workers: Workers, q: sd.Queue) -> None:
    q.enqueue("retry", {"delay": 1.5}, id="later", max_attempts=2, backoff=[0])
    q.enqueue("drop", {}, id="dropped", max_attempts=5)
    q.enqueue("hang", {}, id="hung", max_attempts=2, backoff=[0.05])
    worker = workers.start("a", "--handler-timeout", "0.5", "--until-idle")
    assert worker.wait(60) == 0
    events = workers.events()
    later = [e for e in events if e.id == "later"]
    assert [(e.ev, e.attempt) for e in later] == [("start", 1), ("start", 2), ("done", 2)]
    assert later[1].t - later[0].t >= 1.5  # the delay asked by sd.Retry, by the server clock
    assert [(e.ev, e.attempt) for e in events if e.id == "dropped"] == [("start", 1)]
    assert q.get("dropped") is None and q.dead_list("drop") == []
    hung = [(e.ev, e.attempt) for e in events if e.id == "hung"]
    assert hung == [("start", 1), ("cancelled", 1), ("start", 2), ("cancelled", 2)]
    [dead] = q.dead_list("hang")
    assert dead.attempts == 2
    assert dead.error == "HandlerTimeout: handler ran longer than handler_timeout=0.5s"


def test_list_backoff_schedule_is_honoured(workers: Workers, q: sd.Queue) -> None:
    q.enqueue("flaky", {"succeed_on": 99}, id="sched", max_attempts=5, backoff=[0, 120, 600])
    worker = workers.start("a")

    def delayed_after_two_runs() -> sd.JobInfo | None:
        info = q.get("sched")
        return info if info is not None and info.attempts == 2 else None

    info = wait_for(delayed_after_two_runs, 30, "two failed attempts")
    starts = [e for e in workers.events() if e.id == "sched"]
    assert [e.attempt for e in starts] == [1, 2]
    assert starts[1].t - starts[0].t < 5  # schedule[0] = 0 s: retried at once
    assert info.state == "delayed"
    waited_ms = info.due - starts[1].t * 1000
    # schedule[1] = 120 s after the 2nd failure; the failure comes a fraction of a ms after the
    # recorded start (and the script's clock is whole ms), hence the 1 s of slack above
    assert 120_000 - 5_000 <= waited_ms <= 121_000
    assert q.cancel("sched")
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0


def test_job_that_kills_its_worker_goes_dead_after_max_attempts(
        workers: Workers, q: sd.Queue) -> None:
    q.enqueue("crash", {}, id="killer", max_attempts=3, ttr=1)
    exits: list[int] = []

    def dead_or_restart() -> bool:
        info = q.get("killer")
        if info is not None and info.state == "dead":
            return True
        current = workers.started[-1] if workers.started else None
        if current is None or current.process.poll() is not None:
            if current is not None:
                exits.append(current.process.returncode)
            workers.start(f"w{len(workers.started)}")
        return False

    wait_for(dead_or_restart, 90, "the crashing job to go dead", interval=0.1)
    assert exits == [3, 3, 3]  # three deliveries, each ended by os._exit(3) in the handler
    assert [e.attempt for e in workers.events() if e.id == "killer"] == [1, 2, 3]
    [dead] = q.dead_list("crash")
    assert dead.attempts == 3 and dead.error.startswith("ttr expired: consumer w")


HYGIENE_JOBS = int(os.environ.get("SD_HYGIENE_JOBS", "20000"))


def _memory(client: sd.Queue) -> int:
    return int(client.client.info("memory")["used_memory"])


def test_handled_jobs_leave_nothing_behind(own_redis: RedisServer, tmp_path: Path) -> None:
    name = "hygiene"
    q = sd.Queue(name, url=own_redis.url)
    keys = partition_keys(name, 1)[0]
    started = Workers(own_redis.url, name, tmp_path)
    try:
        worker = started.start("a", "--concurrency", "64")
        worker.wait_ready()
        q.enqueue_many([sd.JobSpec("fast", {"n": i}, id=f"warm{i}") for i in range(500)])
        wait_for(lambda: q.client.hlen(keys.jobs) == 0, 60, "the warm-up jobs")
        time.sleep(1.0)
        before = _memory(q)
        peak = 0
        t0 = time.monotonic()
        for start in range(0, HYGIENE_JOBS, 2000):
            q.enqueue_many([sd.JobSpec("fast", {"n": i, "pad": "x" * 64}, id=f"j{i}")
                            for i in range(start, min(start + 2000, HYGIENE_JOBS))])
            peak = max(peak, _memory(q))
        wait_for(lambda: q.client.hlen(keys.jobs) == 0, 60 + HYGIENE_JOBS / 500,
                 "every job handled", interval=0.2)
        elapsed = time.monotonic() - t0
        time.sleep(1.0)
        after = _memory(q)
        done = count(started.events(), "done")
        assert len(done) == HYGIENE_JOBS + 500 and set(done.values()) == {1}
        stream = keys.stream("fast")
        assert q.client.xlen(stream) == 0
        assert q.client.xpending(stream, "workers")["pending"] == 0
        assert q.client.zcard(keys.delayed) == 0 and q.client.zcard(keys.done) == 0
        fixed = {keys.counts, keys.groups, keys.meta, keys.wake, keys.fleet, keys.workers,
                 *map(keys.stream, TOPICS)}  # workers: one entry per live worker, not per job
        left = {k.decode() for k in q.client.keys("*")}  # the lateness record is per minute
        assert {k for k in left if not k.startswith(keys.lateness)} <= fixed  # no per-job key
        assert after - before < 512 * 1024, (before, peak, after)
        print(f"MEASURED hygiene {HYGIENE_JOBS} jobs in {elapsed:.1f}s: used_memory before "
              f"{before} peak-while-enqueueing {peak} after {after} (delta {after - before:+d} B)"
              f"; stream {q.client.memory_usage(stream)} B")
    finally:
        started.stop_all()
        q.close()


def test_consumers_that_are_gone_and_own_nothing_are_removed(redis_url: str,
                                                             queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url)
    stream = partition_keys(queue_name, 1)[0].stream("fast")

    def consumers() -> dict[str, int]:
        return {c["name"].decode(): c["pending"]
                for c in queue.client.xinfo_consumers(stream, "workers")}

    gone = sd.Worker(queue, consumer="gone-a", block=0.2)
    gone.handler("fast")(lambda job: None)
    queue.enqueue_many([sd.JobSpec("fast", i) for i in range(3)])
    gone.run(until_idle=True)
    queue.enqueue("fast", "held", id="held", ttr=600)

    async def promote() -> None:
        dispatcher = sd.Dispatcher(queue.config)
        await promote_due(dispatcher, partition_keys(queue_name, 1)[0])
        await dispatcher.close()

    asyncio.run(promote())
    assert queue.client.xreadgroup("workers", "holder", {stream: ">"}, count=1)
    assert consumers() == {"gone-a": 0, "holder": 1}
    time.sleep(1.2)

    live = sd.Worker(queue, consumer="live-b", block=0.2, reclaim_interval=0.1)
    live.prune_idle, live.prune_every = 1.0, 0.2
    live.handler("fast")(lambda job: None)

    async def serve_until_pruned() -> None:
        serving = asyncio.create_task(live.serve())
        for _ in range(100):
            await asyncio.sleep(0.1)
            if "gone-a" not in consumers():
                break
        # Quiet for longer than prune_idle: Redis 7.0 does not count empty blocking reads as
        # activity, so live-b may be pruned too; it owns nothing, and its next read that
        # receives a job makes it again.
        await asyncio.sleep(2.5)
        handled = live.counts["handled"]
        await asyncio.to_thread(queue.enqueue, "fast", "after the quiet spell")
        for _ in range(100):
            if live.counts["handled"] > handled:
                break
            await asyncio.sleep(0.05)
        live.stop()
        await serving

    queue.enqueue("fast", "wakes live-b")
    asyncio.run(asyncio.wait_for(serve_until_pruned(), 30))
    assert consumers() == {"holder": 1, "live-b": 0}  # the one holding a job stays
    queue.cancel("held")
    queue.close()


def test_sigterm_just_after_start_exits_cleanly(workers: Workers) -> None:
    """SIGTERM while the loops are still making their first connections: a cancel that lands
    there can be swallowed by the connect (it comes out as a timeout and is retried), and the
    worker used to wait for ever for that loop. Each run must exit 0 within the grace."""
    for run in range(4):
        worker = workers.start(f"early{run}")
        worker.wait_ready()
        time.sleep(0.01 * run)
        worker.signal(signal.SIGTERM)
        assert worker.wait(20) == 0, worker.log()


def test_cancel_all_cancels_a_task_that_swallowed_the_first_cancel() -> None:
    from streamdelay.io.loop_supervision import cancel_all

    swallowed: list[int] = []

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                swallowed.append(1)
                if len(swallowed) > 1:
                    raise

    async def scenario() -> tuple[bool, float]:
        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        began = time.monotonic()
        await cancel_all([task])
        return task.cancelled(), time.monotonic() - began

    cancelled, took = asyncio.run(scenario())
    assert cancelled and len(swallowed) == 2
    assert took < 5
