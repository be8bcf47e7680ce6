"""The same job set through a Python ``Worker`` and through ``reserve`` consumers (sync threads,
asyncio tasks) ends the same way: the same attempts per job, the same jobs handled, the same
dead set with the same attempt counts (docs/pull.md: the rules are a worker's)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import defaultdict

import pytest

import streamdelay as sd

pytestmark = pytest.mark.timeout(120)
TOPIC = "eq.job"
GROUP = "eq"
# ok-*: succeed at once; flaky-*: fail 1 or 2 times, then succeed; dead-*: always fail (dead
# after max_attempts=3); retry-*: fail once with an explicit retry delay.
FAILS = {**{f"ok-{i}": 0 for i in range(6)}, **{f"flaky-{i}": 1 + i % 2 for i in range(6)},
         **{f"dead-{i}": 99 for i in range(4)}, **{f"retry-{i}": 1 for i in range(2)}}
Outcome = tuple[dict[str, list[int]], dict[str, int], set[str]]


def fresh_queue(url: str, limit: int | None = None) -> sd.Queue:
    """A new queue holding the job set, all due now (with a concurrency ``limit`` on TOPIC)."""
    q = sd.Queue(f"q{uuid.uuid4().hex[:10]}", url=url, max_attempts=3, backoff=[0.05])
    if limit is not None:
        q.limit(TOPIC, concurrency=limit)
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": fails}, id=job_id)
                    for job_id, fails in FAILS.items()])
    return q


def outcome(q: sd.Queue, runs: dict[str, list[int]]) -> Outcome:
    """(attempts seen per job, dead job -> attempts, jobs left in the queue)."""
    dead = {d.id: d.attempts for d in q.dead_list(TOPIC, limit=1000)}
    left = {job_id for job_id in FAILS if (info := q.get(job_id)) and info.state != "dead"}
    return {k: sorted(v) for k, v in runs.items()}, dead, left


def idle(q: sd.Queue) -> bool:
    """Nothing delayed, ready or reserved is left on the topic."""
    row = q.stats().topics.get(TOPIC)
    return row is not None and row.delayed + row.ready + row.reserved == 0


def decide(job_id: str, attempt: int, fails: int) -> tuple[str, float | None]:
    """What a handler does on this attempt: ("ack", None) or ("fail", retry delay or None)."""
    if attempt > fails:
        return "ack", None
    return "fail", (0.1 if job_id.startswith("retry-") else None)


def run_worker(url: str, limit: int | None = None) -> Outcome:
    q = fresh_queue(url, limit)
    runs: dict[str, list[int]] = defaultdict(list)
    worker = sd.Worker(q, group=GROUP, concurrency=8)

    @worker.handler(TOPIC)
    async def handle(job: sd.Job) -> None:
        runs[job.id].append(job.attempt)
        action, delay = decide(job.id, job.attempt, job.body["fails"])
        if action == "fail":
            if delay is not None:
                raise sd.Retry(delay=delay)
            raise RuntimeError("boom")

    worker.run(until_idle=True)
    result = outcome(q, runs)
    q.close()
    return result


def run_sync_consumers(url: str, consumers: int = 2, limit: int | None = None) -> Outcome:
    q = fresh_queue(url, limit)
    runs: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()
    loop = asyncio.new_event_loop()
    dispatcher = sd.Dispatcher(q.config)
    promoting = threading.Thread(target=loop.run_until_complete, args=(dispatcher.run(),),
                                 daemon=True)
    promoting.start()
    errors: list[BaseException] = []

    def consume(name: str) -> None:
        mine = sd.Queue(q.name, url=url, max_attempts=3, backoff=[0.05])
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                got = mine.reserve(TOPIC, group=GROUP, consumer=name, wait=0.3, count=4)
                for r in got:
                    with lock:
                        runs[r.id].append(r.attempt)
                    action, delay = decide(r.id, r.attempt, r.body["fails"])
                    if action == "ack":
                        r.ack()
                    else:
                        r.fail("RuntimeError: boom", retry_delay=delay)
                if not got and idle(mine):
                    return
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            mine.close()

    threads = [threading.Thread(target=consume, args=(f"sync-{i}",)) for i in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    loop.call_soon_threadsafe(dispatcher.stop)
    promoting.join(10)
    loop.run_until_complete(dispatcher.close())
    loop.close()
    assert not errors, errors
    result = outcome(q, runs)
    q.close()
    return result


def run_async_consumers(url: str, consumers: int = 3, limit: int | None = None) -> Outcome:
    q = fresh_queue(url, limit)
    runs: dict[str, list[int]] = defaultdict(list)

    async def consume(aq: sd.AsyncQueue, name: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = await aq.reserve(TOPIC, group=GROUP, consumer=name, wait=0.3, count=3)
            for r in got:
                runs[r.id].append(r.attempt)
                action, delay = decide(r.id, r.attempt, r.body["fails"])
                if action == "ack":
                    await r.ack()
                else:
                    await r.fail("RuntimeError: boom", retry_delay=delay)
            if not got:
                row = (await aq.stats()).topics.get(TOPIC)
                if row is not None and row.delayed + row.ready + row.reserved == 0:
                    return

    async def main() -> None:
        async with sd.AsyncQueue(q.name, url=url, max_attempts=3, backoff=[0.05]) as aq:
            dispatcher = sd.Dispatcher(aq.config)
            promoting = asyncio.create_task(dispatcher.run())
            try:
                await asyncio.gather(*(consume(aq, f"async-{i}") for i in range(consumers)))
            finally:
                dispatcher.stop()
                await promoting
                await dispatcher.close()

    asyncio.run(main())
    result = outcome(q, runs)
    q.close()
    return result


def test_worker_and_reserve_consumers_end_the_same(redis_url: str) -> None:
    expected_runs = {job_id: list(range(1, min(fails, 2) + 2)) for job_id, fails in
                     FAILS.items()}
    expected: Outcome = (expected_runs, {f"dead-{i}": 3 for i in range(4)}, set())
    by_worker = run_worker(redis_url)
    assert by_worker == expected  # the job set itself behaves as designed
    assert run_sync_consumers(redis_url) == by_worker
    assert run_async_consumers(redis_url) == by_worker


def test_the_same_under_a_concurrency_limit(redis_url: str) -> None:
    """With concurrency 2 on the topic, the worker (concurrency 8) and reserve consumers
    (count 3 and 4) end the job set the same way as without: the limit spends no attempt."""
    by_worker = run_worker(redis_url, limit=2)
    assert by_worker == run_worker(redis_url)
    assert run_sync_consumers(redis_url, limit=2) == by_worker
    assert run_async_consumers(redis_url, limit=2) == by_worker
