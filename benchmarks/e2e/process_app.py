"""The worker module of the process executor's benchmark (``benchmarks/e2e/process_executor.py``):
``streamdelay worker benchmarks.e2e.process_app:noop_worker [--processes N]`` (or
``cpu_worker``).

Settings from the environment: ``BENCH_QUEUE`` (the queue; the URL from ``--url``) and
``BENCH_CPU_LOOPS`` (the iterations of ``spin``, calibrated by the benchmark to about 10 ms of
pure Python). One topic per worker (a worker holding fewer jobs than it has topics reads them
in turns, docs/worker.md#concurrency: not what is measured here): ``noop_worker``'s
``bench.noop`` returns at once, ``cpu_worker``'s ``bench.cpu`` spins.
"""

from __future__ import annotations

import os

import streamdelay as sd

NOOP, CPU = "bench.noop", "bench.cpu"
LOOPS = int(os.environ.get("BENCH_CPU_LOOPS", "100000"))

queue = sd.Queue(os.environ.get("BENCH_QUEUE", "bench"),
                 url=os.environ.get("STREAMDELAY_URL", "redis://127.0.0.1:6379/0"))
noop_worker = sd.Worker(queue, group="bench", concurrency=64)
cpu_worker = sd.Worker(queue, group="bench", concurrency=64)


def spin(loops: int) -> int:
    """Pure Python work holding the GIL: ``loops`` multiply-and-modulo steps."""
    total = 0
    for i in range(loops):
        total += i * i % 7
    return total


@noop_worker.handler(NOOP)
def noop(job: sd.Job) -> None:
    """Nothing: the cost measured is the executor's."""


@cpu_worker.handler(CPU)
def cpu(job: sd.Job) -> None:
    """About 10 ms of pure Python (``BENCH_CPU_LOOPS``)."""
    spin(LOOPS)
