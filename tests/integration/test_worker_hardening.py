"""Worker hardening: overrunning threads, hand-overs, settling whatever is raised, ack batches.

In-process workers on the shared real redis-server; each test reproduces one defect of the
hardening issue (docs/worker.md describes the behaviour these tests pin down).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest
import redis

import streamdelay as sd
from streamdelay.base.validation import MAX_DELAY_SECONDS
from streamdelay.cli.loading import with_overrides
from streamdelay.consume.acks import ACK_BATCH, ACK_BYTES, PendingAcks, batch_length
from streamdelay.dispatch.dispatcher import Dispatcher
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.backoff import retry_delay
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.keys import partition_keys
from streamdelay.protocol.scripts import script
from tests.support.promoting import promote_due


async def _serve_until(worker: sd.Worker, done: Callable[[], bool], timeout: float) -> None:
    """Serve until ``done()`` holds (or ``timeout``), then stop gracefully."""
    serving = asyncio.ensure_future(worker.serve())
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline and not serving.done():
        await asyncio.sleep(0.05)
    worker.stop()
    await serving


def _wait_threads(seconds: float) -> None:
    """Let handler threads a test left behind end before the next test."""
    deadline = time.monotonic() + seconds
    for thread in threading.enumerate():
        if thread.name.startswith("streamdelay"):
            thread.join(max(0.0, deadline - time.monotonic()))


# --- a def handler that outlives handler_timeout --------------------------------------------

def test_overrunning_thread_is_never_run_twice_at_once(queue: sd.Queue) -> None:
    queue.enqueue("slow", {}, id="slow-1", max_attempts=3, backoff=[0])
    worker = sd.Worker(queue, handler_timeout=0.3, reclaim_interval=0.1, block=0.1)
    lock = threading.Lock()
    running, most, runs = [0], [0], [0]

    @worker.handler("slow")
    def slow(job: sd.Job) -> None:
        with lock:
            running[0] += 1
            runs[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(1.0)
        with lock:
            running[0] -= 1

    asyncio.run(_serve_until(worker, lambda: bool(queue.dead_list("slow")), 15))
    _wait_threads(3)
    assert most[0] == 1  # one run at a time, whatever the timeout did
    assert runs[0] == 3
    [dead] = queue.dead_list("slow")
    assert dead.error == "HandlerTimeout: handler ran longer than handler_timeout=0.3s"


def test_job_behind_a_stuck_thread_runs_and_is_timed_from_its_own_start(queue: sd.Queue) -> None:
    queue.enqueue("slow", {}, id="stuck", max_attempts=1)
    worker = sd.Worker(queue, concurrency=1, handler_timeout=0.3, block=0.1)
    ran: list[str] = []

    @worker.handler("slow")
    def slow(job: sd.Job) -> None:
        ran.append(job.id)
        if job.id == "stuck":
            queue.enqueue("slow", {}, id="behind", max_attempts=1)
            queue.enqueue("slow", {}, id="cancelled", max_attempts=1)
            time.sleep(0.3)
            queue.cancel("cancelled")  # read (old code) but not started yet: must not run
            time.sleep(0.7)

    asyncio.run(_serve_until(worker, lambda: "behind" in ran and queue.get("behind") is None,
                             10))
    _wait_threads(3)
    assert "behind" in ran and "cancelled" not in ran
    assert [d.id for d in queue.dead_list("slow")] == ["stuck"]


# --- claim --to: a live worker runs what it is handed ---------------------------------------

def test_jobs_handed_to_a_live_worker_run_without_losing_an_attempt(queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="handed", max_attempts=1, ttr=5)
    worker = sd.Worker(queue, group="g", consumer="live-1", dispatch=False,
                       reclaim_interval=0.1, block=0.1)
    ran: list[tuple[str, int]] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        ran.append((job.id, job.attempt))

    async def scenario() -> None:
        await worker.register()
        dispatcher = Dispatcher(queue.config)
        assert await promote_due(dispatcher, keys) == 1
        await dispatcher.close()
        queue.client.xreadgroup("g", "ghost", {keys.stream("t"): ">"}, count=1)  # goes silent
        serving = asyncio.ensure_future(worker.serve())
        await asyncio.sleep(0.5)  # live-1 reads (nothing left) and heartbeats
        assert queue.claim("g", min_idle=0, to="live-1").moved == ["handed"]
        deadline = time.monotonic() + 3  # well before the ttr of 5 s
        while not ran and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        worker.stop()
        await serving

    keys = partition_keys(queue.name, 1)[0]
    asyncio.run(scenario())
    assert ran == [("handed", 1)]
    assert queue.dead_list("t") == [] and queue.get("handed") is None


# --- every delivery is settled, with the real reason ----------------------------------------

DEEP = b"[" * 5000 + b"]" * 5000


def _store_raw_body(queue: sd.Queue, job_id: str, body: bytes) -> None:
    """Rewrite a delayed job's body as a foreign producer could (no depth limit)."""
    jobs = partition_keys(queue.name, 1)[0].jobs
    parts = queue.client.hget(jobs, job_id).split(b"|", 8)
    parts[8] = encode_blob("j", body, {}, None)
    queue.client.hset(jobs, job_id, b"|".join(parts))


def test_undecodable_deep_body_is_dead_with_its_reason_and_get_still_works(
        queue: sd.Queue, redis_url: str) -> None:
    queue.enqueue("t", {"a": 1}, id="deep", delay=3600, ttr=2, max_attempts=3)
    _store_raw_body(queue, "deep", DEEP)
    info = queue.get("deep")  # a stored deep body comes back raw, never as RecursionError
    assert info is not None and info.body == DEEP
    got = subprocess.run([sys.executable, "-m", "streamdelay", "get", queue.name, "deep",
                          "--url", redis_url], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    queue.reschedule("deep", delay=0)
    worker = sd.Worker(queue, block=0.1)
    ran: list[str] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        ran.append(job.id)

    asyncio.run(_serve_until(worker, lambda: bool(queue.dead_list("t")), 6))
    [dead] = queue.dead_list("t")
    assert ran == [] and dead.attempts == 1
    assert dead.error.startswith("BodyDecodeError: body: "), dead.error
    assert "RecursionError" in dead.error


def test_backoff_beyond_the_longest_delay_is_capped() -> None:
    assert retry_delay(sd.Backoff(base=1e9, cap=1e9, jitter=False), 1) == MAX_DELAY_SECONDS
    assert retry_delay([1e12], 3) == MAX_DELAY_SECONDS


def test_failure_with_a_huge_backoff_is_settled_as_a_retry(queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="far", max_attempts=3,
                  backoff=sd.Backoff(base=1e9, cap=1e9, jitter=False))
    worker = sd.Worker(queue, block=0.1)

    @worker.handler("t")
    async def fail(job: sd.Job) -> None:
        raise RuntimeError("boom")

    def retried() -> bool:
        info = queue.get("far")
        return info is not None and info.state == "delayed" and info.attempts == 1

    asyncio.run(_serve_until(worker, retried, 6))
    info = queue.get("far")
    assert info is not None and info.state == "delayed" and info.attempts == 1
    assert info.due - info.created >= (MAX_DELAY_SECONDS - 60) * 1000  # waits the longest delay


# --- acknowledgements are kept until written ------------------------------------------------

def test_acks_in_a_flush_cancelled_by_shutdown_are_still_written(queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="acked")
    worker = sd.Worker(queue, block=0.1)
    pauser = redis.Redis.from_url(queue.config.url)

    @worker.handler("t")
    async def pause_redis(job: sd.Job) -> None:
        # writes (the ack) wait 1.5 s; stop the worker while its ack call waits
        pauser.execute_command("CLIENT", "PAUSE", 1500, "WRITE")
        asyncio.get_running_loop().call_later(0.3, worker.stop)

    asyncio.run(worker.serve())
    pauser.close()
    assert queue.get("acked") is None  # acknowledged, not left reserved
    assert worker.counts["handled"] == 1


# --- the CLI's overrides keep every other setting --------------------------------------------

class TunedWorker(sd.Worker):
    """A Worker subclass: the CLI must not turn it into a plain Worker."""


def test_cli_overrides_keep_every_other_setting(queue: sd.Queue) -> None:
    worker = TunedWorker(queue, group="g", concurrency=3, handler_timeout=None, block=0.2,
                         reclaim_interval=0.3, shutdown_grace=4, dispatch=False)
    worker.prune_idle, worker.prune_every = 12.0, 7.0

    @worker.handler("t")
    async def noop(job: sd.Job) -> None:
        pass

    rebuilt = with_overrides(worker, url=None, concurrency=9, group=None, dispatch=None,
                             partitions=None)
    assert type(rebuilt) is TunedWorker and rebuilt.concurrency == 9
    assert (rebuilt.group, rebuilt.handler_timeout, rebuilt.block, rebuilt.reclaim_interval,
            rebuilt.shutdown_grace, rebuilt.dispatch, rebuilt.consumer) == (
        "g", None, 0.2, 0.3, 4, False, worker.consumer)
    assert (rebuilt.prune_idle, rebuilt.prune_every) == (12.0, 7.0)
    assert rebuilt.handlers == worker.handlers


# --- a Dispatcher runs again after a stop ---------------------------------------------------

def test_dispatcher_can_be_run_twice(queue: sd.Queue) -> None:
    dispatcher = Dispatcher(queue.config)

    async def one_run(job_id: str) -> int:
        queue.enqueue("t", {}, id=job_id, delay=0.2)
        before = dispatcher.promoted
        running = asyncio.ensure_future(dispatcher.run())
        deadline = time.monotonic() + 3
        while dispatcher.promoted == before and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        dispatcher.stop()
        await asyncio.wait_for(running, 5)
        await dispatcher.close()
        return dispatcher.promoted - before

    assert asyncio.run(one_run("first")) == 1
    assert asyncio.run(one_run("second")) == 1


def test_release_later_hands_back_due_after_the_delay_uncounted_and_is_retry_safe(
        queue: sd.Queue) -> None:
    c = queue.client
    keys = partition_keys(queue.name, 1)[0]
    queue.enqueue("t", id="held")
    run_step_sync(c, script("registerGroup").call(keys.script_keys(), ["workers", "t"]))
    deadline = time.monotonic() + 2  # due is the next whole ms after the enqueue's µs clock
    while not run_step_sync(c, script("promoteDue").call(keys.script_keys(), [100]))[0]:
        assert time.monotonic() < deadline
    [(_, [(eid, _)])] = c.xreadgroup("workers", "c1", {keys.stream("t"): ">"}, count=1)
    args = ["workers", 2000, "t", "held", eid.decode()]
    before_ms = c.time()[0] * 1000
    release = script("releaseJobsLater").call(keys.script_keys(), args)
    assert run_step_sync(c, release) == 1
    assert run_step_sync(c, release) == 0  # a resent call changes nothing
    info = queue.get("held")
    assert info is not None and info.state == "delayed" and info.attempts == 0
    assert info.due >= before_ms + 2000
    assert c.xpending(keys.stream("t"), "workers")["pending"] == 0
    assert c.xlen(keys.stream("t")) == 0


def test_a_read_whose_reply_was_lost_is_run_from_the_own_pending_list(queue: sd.Queue) -> None:
    queue.enqueue("t", {"seconds": 1.0}, id="busy")
    worker = sd.Worker(queue, group="g", consumer="live-2", concurrency=1, dispatch=False,
                       reclaim_interval=0.1, block=0.1)
    keys = partition_keys(queue.name, 1)[0]
    ran: list[tuple[str, int]] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        ran.append((job.id, job.attempt))
        await asyncio.sleep(job.body["seconds"])

    async def scenario() -> None:
        await worker.register()
        dispatcher = Dispatcher(queue.config)
        await promote_due(dispatcher, keys)
        serving = asyncio.ensure_future(worker.serve())
        while not ran:
            await asyncio.sleep(0.02)
        # the only slot is busy: nothing reads; Redis delivers one entry to live-2 whose reply
        # never reaches the worker (as when a read is cancelled or times out mid-flight)
        queue.enqueue("t", {"seconds": 0}, id="lost", max_attempts=1, ttr=5)
        await promote_due(dispatcher, keys)
        await dispatcher.close()
        queue.client.xreadgroup("g", "live-2", {keys.stream("t"): ">"}, count=1)
        deadline = time.monotonic() + 3  # well before the ttr of 5 s
        while len(ran) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        worker.stop()
        await serving

    asyncio.run(scenario())
    assert ran == [("busy", 1), ("lost", 1)]
    assert queue.get("lost") is None and queue.dead_list("t") == []


def test_a_job_reclaimed_while_its_thread_runs_waits_for_that_run(queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="long", max_attempts=3)
    worker = sd.Worker(queue, reclaim_interval=0.1, block=0.1)
    lock = threading.Lock()
    running, most = [0], [0]
    attempts: list[int] = []

    @worker.handler("t")
    def slow(job: sd.Job) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            attempts.append(job.attempt)
        if job.attempt == 1:
            queue.claim("workers", min_idle=0)  # an operator re-queues the running delivery
        time.sleep(0.8)
        with lock:
            running[0] -= 1

    asyncio.run(_serve_until(worker, lambda: len(attempts) == 2 and running[0] == 0
                             and queue.get("long") is None, 10))
    _wait_threads(3)
    assert attempts == [1, 2] and most[0] == 1


def test_ack_batches_leave_the_queue_only_once_written() -> None:
    acks = PendingAcks()
    for i in range(ACK_BATCH + 2):
        acks.add(0, "t", f"j{i}", f"1-{i}")
    sent: list[int] = []

    async def failing(partition: int, flat: list[str]) -> None:
        raise ConnectionError("redis went away")

    async def recording(partition: int, flat: list[str]) -> None:
        sent.append(len(flat) // 3)

    with pytest.raises(ConnectionError):
        asyncio.run(acks.flush(failing))
    assert len(acks.entries(0)) == ACK_BATCH + 2  # nothing dropped by the failed call
    asyncio.run(acks.flush(recording))
    assert sent == [ACK_BATCH, 2] and not acks


@pytest.mark.parametrize("sizes, expected", [
    ([10] * (ACK_BATCH + 100), ACK_BATCH),          # small records: the count bound
    ([ACK_BYTES * 2, 10, 10], 1),                    # one record over the budget goes alone
    ([ACK_BYTES // 2, ACK_BYTES // 2, 10], 2),       # exactly the budget
    ([ACK_BYTES // 2] * 3, 2),                       # the third would pass it
    ([7], 1),
])
def test_ack_batches_are_bounded_by_record_bytes(sizes: list[int], expected: int) -> None:
    assert batch_length(sizes) == expected


def test_jobs_settled_while_the_own_pending_list_is_read_are_not_run_again(
        redis_url: str, queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url, partitions=8)
    queue.enqueue_many([sd.JobSpec("t", i, id=f"n{i}") for i in range(3000)])
    worker = sd.Worker(queue, concurrency=16, reclaim_interval=0.05, block=0.1)
    runs: list[str] = []

    @worker.handler("t")
    def record(job: sd.Job) -> None:
        runs.append(job.id)

    worker.run(until_idle=True)
    queue.close()
    assert len(runs) == 3000 and len(set(runs)) == 3000  # each exactly once


def test_entries_left_by_an_earlier_process_of_the_same_name_come_back_counted(
        queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="crashed", ttr=1, max_attempts=3)
    worker = sd.Worker(queue, group="g", consumer="fixed-name", dispatch=False,
                       reclaim_interval=0.1, block=0.1)
    keys = partition_keys(queue.name, 1)[0]
    ran: list[tuple[str, int]] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        ran.append((job.id, job.attempt))

    async def scenario() -> None:
        await worker.register()
        dispatcher = Dispatcher(queue.config)
        await promote_due(dispatcher, keys)
        # an earlier process named fixed-name read the job, then died
        queue.client.xreadgroup("g", "fixed-name", {keys.stream("t"): ">"}, count=1)
        serving = asyncio.ensure_future(worker.serve())
        await asyncio.sleep(0.6)
        assert ran == []  # not run in place: a job that kills its worker must not loop for free
        deadline = time.monotonic() + 5
        while not ran and time.monotonic() < deadline:
            await dispatcher.promote_once(keys)
            await asyncio.sleep(0.05)
        await dispatcher.close()
        worker.stop()
        await serving

    asyncio.run(scenario())
    assert ran == [("crashed", 2)]  # re-queued after its ttr, counted as an attempt
