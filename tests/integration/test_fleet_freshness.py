"""How fresh ``Queue.workers`` shows what a worker runs (docs/operations.md#workers): with the
default renewal (every 15 s) a worker tells a change of its running jobs within about a second
(at most one write a second), not at its next periodic renewal; idle, it writes nothing more."""

from __future__ import annotations

import asyncio
import time

import pytest

import streamdelay as sd
from streamdelay.consume.fleet_self import RUNNING_SAY_S, until_renewal

pytestmark = pytest.mark.timeout(90)
BOUND_S = 6.0  # the promise is ~1 s; a loaded machine gets slack, far below the 15 s renewal


def test_running_jobs_are_shown_within_about_a_second(queue: sd.Queue) -> None:
    worker = sd.Worker(queue, concurrency=2)
    assert worker.fleet_every >= 15  # the default: a change is not waiting for it

    @worker.handler("t")
    async def slow(job: sd.Job) -> None:
        await asyncio.sleep(job.body["s"])

    queue.enqueue("other", {}, delay=3600)  # creates the queue

    async def main() -> tuple[float, float]:
        task = asyncio.create_task(worker.serve())
        try:
            while not queue.workers():  # listed at its start
                assert not task.done()
                await asyncio.sleep(0.05)
            job = queue.enqueue("t", {"s": 4}).id
            asked = time.monotonic()
            while not any(job in w.running for w in queue.workers()):
                assert time.monotonic() - asked < BOUND_S, "running job not shown"
                await asyncio.sleep(0.05)
            shown = time.monotonic() - asked
            while any(w.running for w in queue.workers()):
                assert time.monotonic() - asked < 4 + BOUND_S, "ended job still shown"
                await asyncio.sleep(0.05)
            return shown, time.monotonic() - asked - 4
        finally:
            worker.stop()
            await task

    shown, cleared = asyncio.run(main())
    print(f"running job shown after {shown:.2f}s, cleared {cleared:.2f}s after it ended")


def test_until_renewal_waits_its_period_when_nothing_changes() -> None:
    calls: list[float] = []

    def entry() -> str:
        calls.append(time.monotonic())
        return "same"

    start = time.monotonic()
    asyncio.run(until_renewal(2.5, entry))
    assert time.monotonic() - start >= 2.5
    assert len(calls) <= 1 + 2.5 / RUNNING_SAY_S  # one look a tick, no more

    states = iter(["a", "a", "b"])
    start = time.monotonic()
    asyncio.run(until_renewal(60, lambda: next(states)))
    assert time.monotonic() - start < 2 * RUNNING_SAY_S + 5  # the second tick saw the change
