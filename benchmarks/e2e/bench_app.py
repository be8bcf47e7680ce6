"""The worker module the benchmarks run: ``streamdelay worker benchmarks.e2e.bench_app:worker``.

Settings come from the environment (the benchmark that starts the worker sets them):

- ``BENCH_QUEUE``: the queue name; the URL comes from ``--url`` (``STREAMDELAY_URL``).
- ``BENCH_MODE``: ``record`` (default) or ``noop``. In ``record`` mode the handler notes, at its
  very first line, the handler-start time on the Redis server clock and appends
  ``job id|start ms|due ms|stream entry id|attempt|pid`` to the list ``BENCH_RECORDS`` (buffered,
  flushed every few ms by a background task, so recording costs no round trip per job).

The Redis server clock is the local clock plus an offset measured at import against Redis
``TIME`` (the sample with the shortest round trip wins; its half round trip is the error bound,
published in ``bench:offset:<pid>``).
"""

from __future__ import annotations

import asyncio
import os
import time

import redis
import redis.asyncio as aioredis

import streamdelay as sd
from benchmarks.core.harness import GROUP, TOPIC, measure_clock_offset

QUEUE = os.environ.get("BENCH_QUEUE", "bench")
MODE = os.environ.get("BENCH_MODE", "record")
RECORDS_KEY = os.environ.get("BENCH_RECORDS", f"bench:records:{QUEUE}")
FLUSH_EVERY = 0.02


_url = os.environ.get("STREAMDELAY_URL", "redis://127.0.0.1:6379/0")
queue = sd.Queue(QUEUE, url=_url)
worker = sd.Worker(queue, group=GROUP, concurrency=int(os.environ.get("BENCH_CONCURRENCY", "64")))
_buffer: list[str] = []
_flusher: asyncio.Task[None] | None = None
if MODE == "record":
    with redis.Redis.from_url(_url) as _probe:
        OFFSET_MS, ERROR_MS = measure_clock_offset(_probe)
        _probe.set(f"bench:offset:{os.getpid()}", f"{OFFSET_MS:.4f}|{ERROR_MS:.4f}")
else:
    OFFSET_MS, ERROR_MS = 0.0, 0.0


async def _flush_loop() -> None:
    """Push the buffered records to Redis every ``FLUSH_EVERY`` seconds."""
    client = aioredis.Redis.from_url(_url)
    try:
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            if _buffer:
                batch = _buffer[:]
                del _buffer[:len(batch)]
                await client.rpush(RECORDS_KEY, *batch)
    finally:
        await client.aclose()


@worker.handler(TOPIC)
async def handle(job: sd.Job) -> None:
    """Record when the handler started (server clock), or do nothing in ``noop`` mode."""
    if MODE != "record":
        return
    started_ms = time.time() * 1000.0 + OFFSET_MS
    global _flusher
    if _flusher is None:
        _flusher = asyncio.get_running_loop().create_task(_flush_loop())
    _buffer.append(f"{job.id}|{started_ms:.3f}|{job.due}|{job.entry_id}|{job.attempt}|"
                   f"{os.getpid()}")



def _log_long_gc_pauses() -> None:
    """With ``BENCH_GC_LOG`` set: print every garbage-collector pause over 2 ms to stderr."""
    import gc
    import sys

    started: list[float] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started:
            took = (time.perf_counter() - started[0]) * 1000
            if took > 2:
                print(f"GC gen{info['generation']} pause {took:.1f} ms", file=sys.stderr)

    gc.callbacks.append(watch)


if os.environ.get("BENCH_GC_LOG"):
    _log_long_gc_pauses()

if os.environ.get("BENCH_TRACE"):  # per-job timestamps, see benchmarks/e2e/lateness_trace.py
    from benchmarks.e2e.lateness_trace import install

    install(os.environ["BENCH_TRACE"])
