"""``streamdelay.testing.drain`` (docs/testing.md#drain) on a real server: every job of the
worker's topics runs now in the test's process, delayed ones and retries waiting for their
backoff included (rescheduled to now between rounds, in due order), and each run's outcome
comes back; other topics' jobs are left alone."""

from __future__ import annotations

import asyncio
import time

import msgspec
import pytest

import streamdelay as sd
from streamdelay.consume.upkeep_loops import idle_watch
from streamdelay.testing import DrainError, Outcome, drain, drain_async

pytestmark = pytest.mark.timeout(120)


class Order(msgspec.Struct):
    """A typed body."""

    n: int


def worker_of(q: sd.Queue) -> sd.Worker:
    """A worker whose handlers succeed, retry, die, drop and run async by the body."""
    worker = sd.Worker(q, group="g", dispatch=False)  # drain runs its own dispatcher anyway

    @worker.handler("plain")
    def plain(job: sd.Job) -> str:
        if job.body == "flaky" and job.attempt < 3:
            raise sd.Retry(delay=3600, reason="later")  # an hour: only a fast forward runs it
        if job.body == "broken":
            raise RuntimeError("always fails")
        if job.body == "drop":
            raise sd.Drop("not needed")
        return f"ok {job.body}"

    @worker.handles(sd.task("typed", body=Order, result=int))
    async def typed(job: sd.Job[Order]) -> int:
        return job.body.n * 2

    return worker


def test_delayed_jobs_and_retries_run_now(queue: sd.Queue) -> None:
    queue.enqueue("plain", "late", id="late", delay=7 * 86400)
    queue.enqueue("plain", "flaky", id="flaky", delay=3600, backoff=sd.Backoff(base=3600))
    queue.enqueue("plain", "broken", id="broken", max_attempts=2, backoff=[3600])
    queue.enqueue("plain", "drop", id="drop")
    queue.enqueue("typed", {"n": 21}, id="typed", delay=600)
    queue.enqueue("other", "untouched", id="other", delay=60)
    started = time.monotonic()
    outcomes = drain(worker_of(queue))
    assert time.monotonic() - started < 60  # no real wait for an hour, a week
    runs = sorted((o.id, o.attempt, o.state) for o in outcomes)
    assert runs == [("broken", 1, "retried"), ("broken", 2, "dead"), ("drop", 1, "dropped"),
                    ("flaky", 1, "retried"), ("flaky", 2, "retried"), ("flaky", 3, "succeeded"),
                    ("late", 1, "succeeded"), ("typed", 1, "succeeded")]
    by_id = {o.id: o for o in outcomes if o.state != "retried"}
    assert by_id["late"].value == "ok late" and by_id["late"].body == "late"
    assert by_id["typed"].value == 42 and by_id["typed"].body == Order(n=21)
    assert isinstance(by_id["broken"].error, RuntimeError)
    assert isinstance(by_id["drop"].error, sd.Drop)
    assert [o.id for o in queue.dead_list()] == ["broken"]  # settled by the worker, for real
    other = queue.get("other")
    assert other is not None and other.state == "delayed"  # not the worker's topic
    assert other.due - other.created == 60_000  # not moved
    assert queue.get("late") is None and queue.stats().topics["plain"].delayed == 0


def test_fast_forward_keeps_the_due_order(queue: sd.Queue) -> None:
    for index, delay in enumerate((500, 30, 90_000, 7, 4000)):
        queue.enqueue("ordered", index, id=f"o{index}", delay=delay)
    worker = sd.Worker(queue, group="g", concurrency=1)
    worker.handler("ordered")(lambda job: None)
    assert [o.id for o in drain(worker)] == ["o3", "o1", "o0", "o4", "o2"]


def test_a_rounds_idle_check_waits_for_a_due_job_not_promoted_yet(queue: sd.Queue) -> None:
    """A drain round's idle check (delayed jobs do not count) must not stop the worker while a
    job is due but not promoted yet: a dispatcher that promotes it just after the stop leaves it
    in its stream, unrun, with nothing delayed (seen under load: drain returned after one run)."""
    queue.enqueue("plain", "due", id="due", delay=0.05)
    time.sleep(0.3)  # due now; no dispatcher runs, so it stays due and not promoted
    runner = worker_of(queue).replace(dispatch=False, block=0.05, metrics_port=None)

    async def main() -> bool:
        serving = asyncio.ensure_future(runner.serve())
        watching = asyncio.ensure_future(idle_watch(runner, count_delayed=False))
        await asyncio.wait([watching], timeout=2.0)  # the old check stopped within a tick
        stopped = watching.done()
        runner.stop()
        watching.cancel()
        await asyncio.gather(serving, watching, return_exceptions=True)
        return stopped

    assert not asyncio.run(main())
    job = queue.get("due")
    assert job is not None and job.state == "delayed"  # still there, as the check saw it


def test_without_fast_forward_delayed_jobs_run_on_time(queue: sd.Queue) -> None:
    queue.enqueue("plain", "soon", id="soon", delay=1.5)
    started = time.monotonic()
    outcomes = drain(worker_of(queue), fast_forward=False)
    assert [(o.id, o.state) for o in outcomes] == [("soon", "succeeded")]
    assert time.monotonic() - started >= 1.4  # it waited for the due time (server clock)


def test_a_job_that_reenqueues_itself_stops_at_max_rounds(queue: sd.Queue) -> None:
    worker = sd.Worker(queue, group="g")

    @worker.handler("forever")
    def again(job: sd.Job) -> None:
        queue.enqueue("forever", job.body + 1, delay=60)

    queue.enqueue("forever", 0)
    with pytest.raises(DrainError, match="3 rounds"):
        drain(worker, max_rounds=3)


def test_drain_async_in_a_running_loop(queue: sd.Queue) -> None:
    queue.enqueue("typed", {"n": 2}, delay=3600)

    async def main() -> list[Outcome]:
        with pytest.raises(DrainError, match="drain_async"):
            drain(worker_of(queue))  # the blocking form refuses a running loop
        return await drain_async(worker_of(queue))

    outcomes = asyncio.run(main())
    assert [(o.state, o.value) for o in outcomes] == [("succeeded", 4)]


def test_an_empty_queue_drains_to_nothing(queue: sd.Queue) -> None:
    queue.enqueue("unrelated", 1, delay=60)  # the queue exists; none of the worker's topics
    assert drain(worker_of(queue)) == []
