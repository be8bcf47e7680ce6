"""streamdelay in the peers harness: ``Queue.enqueue`` one call per job; one
``streamdelay worker`` process with default settings (concurrency 32, embedded dispatcher)."""

from __future__ import annotations

import sys
import time

import streamdelay as sd
from benchmarks.peers.record import body, record, url

DIST = "streamdelay"
WORKER_NOTE = "`streamdelay worker benchmarks.peers.sd_peer:worker` (defaults: 1 process, " \
              "concurrency 32, embedded dispatcher); async handler"

queue = sd.Queue("bench", url=url())
worker = sd.Worker(queue)


@worker.handler("bench.job")
async def noop(job: sd.Job) -> None:
    """The no-op handler: record the job id and the time."""
    record(job.body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``Queue.enqueue`` per job, due at its absolute time; seconds for the loop."""
    q = sd.Queue("bench", url=url())
    try:
        began = time.perf_counter()
        for job_id, due in jobs:
            q.enqueue("bench.job", body(job_id), at=due, id=job_id)
        return time.perf_counter() - began
    finally:
        q.close()


def worker_command() -> list[str]:
    """The worker process, as the docs start it."""
    return [sys.executable, "-m", "streamdelay", "worker", "benchmarks.peers.sd_peer:worker",
            "--url", url(), "--log-level", "warning"]
