"""The worker module of the abort-latency benchmark (``benchmarks/e2e/abort_latency.py``):
``streamdelay worker benchmarks.e2e.abort_app:worker [--processes N]``.

Settings from the environment: ``BENCH_QUEUE`` (the queue; the URL from ``--url``) and
``BENCH_ABORT_DIR`` (where each handler writes ``<job id>.start`` when it starts and
``<job id>.end`` when it ends, each holding ``time.time()``: the benchmark reads them). Every
handler runs until it is aborted (docs/worker.md#abort): ``bench.async`` (an ``async def``,
cancelled at its ``await``), ``bench.poll`` (a ``def`` that calls ``job.check_abort()`` every
10 ms) and ``bench.sleep`` (a ``def`` that never looks: in the process executor its child gets
SIGTERM, and the ``SystemExit`` runs its ``finally``).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import streamdelay as sd

ASYNC, POLL, SLEEP = "bench.async", "bench.poll", "bench.sleep"
LONGEST_S = 120.0  # a handler that was never aborted ends by itself: the benchmark then fails it

queue = sd.Queue(os.environ.get("BENCH_QUEUE", "bench"),
                 url=os.environ.get("STREAMDELAY_URL", "redis://127.0.0.1:6379/0"))
worker = sd.Worker(queue, group="bench", concurrency=128)


def _mark(job: sd.Job, what: str) -> None:
    path = Path(os.environ.get("BENCH_ABORT_DIR", "."), f"{job.id}.{what}")
    path.write_text(repr(time.time()))


@worker.handler(ASYNC)
async def wait_async(job: sd.Job) -> None:
    """Await until cancelled by the abort."""
    _mark(job, "start")
    try:
        await asyncio.sleep(LONGEST_S)
    finally:
        _mark(job, "end")


@worker.handler(POLL)
def poll(job: sd.Job) -> None:
    """Steps of 10 ms, ``job.check_abort()`` between them (raises ``sd.Aborted``)."""
    _mark(job, "start")
    try:
        ends = time.monotonic() + LONGEST_S
        while time.monotonic() < ends:
            job.check_abort()
            time.sleep(0.01)
    finally:
        _mark(job, "end")


@worker.handler(SLEEP)
def sleep(job: sd.Job) -> None:
    """Sleep without looking: only a process executor can stop it (SIGTERM to its child)."""
    _mark(job, "start")
    try:
        time.sleep(LONGEST_S)
    finally:
        _mark(job, "end")
