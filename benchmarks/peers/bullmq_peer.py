"""BullMQ (the Python package) in the peers harness: ``Queue.add(..., {"delay": ms})`` one call
per job; one worker process running ``bullmq.Worker`` with default options (concurrency 1).

BullMQ for Python has no worker command; its docs start a ``Worker`` in your own script, which
is what ``python -m benchmarks.peers.bullmq_peer`` does.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from typing import Any

from bullmq import Queue, Worker

from benchmarks.peers.record import body, record, url

DIST = "bullmq"
WORKER_NOTE = "`python -m benchmarks.peers.bullmq_peer` (a `bullmq.Worker` with default " \
              "options: 1 process, concurrency 1); async handler"
ONE_AT_A_TIME = "its default (`concurrency` 1)"  # the concurrency-1 drain


async def noop(job: Any, token: str) -> None:
    """The no-op handler: record the job id and the time."""
    record(job.data["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``add`` per job, delay = due - now in ms; seconds for the loop."""

    async def go() -> float:
        queue = Queue("bench", {"connection": url()})
        try:
            began = time.perf_counter()
            for job_id, due in jobs:
                await queue.add("noop", body(job_id),
                                {"jobId": job_id,
                                 "delay": max(0, int((due - time.time()) * 1000))})
            return time.perf_counter() - began
        finally:
            await queue.close()

    return asyncio.run(go())


async def _serve() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    worker = Worker("bench", noop, {"connection": url()})
    await stop.wait()
    await worker.close()


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process: this module's ``__main__`` (concurrency 1: ``one_at_a_time`` too)."""
    return [sys.executable, "-m", "benchmarks.peers.bullmq_peer"]


if __name__ == "__main__":
    asyncio.run(_serve())
