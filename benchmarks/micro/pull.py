"""The pull API (docs/pull.md) on a ready backlog: reserve + ack latency and drain rates.

One private redis-server; ``SIZE`` jobs of topic ``bench.job`` are enqueued and promoted (the
backlog is ready, in the stream). Then: (1) one sync consumer, ``reserve()`` of one job then
``ack()``, ``RUNS`` times: wall ms per pair (p50, p99); (2) one sync consumer draining with
``reserve(count=100)`` then one ``ack`` per job; (3) 8 ``AsyncQueue.reserve`` tasks (count=10)
in one process, each acking its jobs. Rates are jobs settled per second, wall clock.

Run: ``.venv/bin/python benchmarks/micro/pull.py [SIZE]`` (default 20,000). Not part of ``make
bench`` yet: ``section(size)`` returns its report section for ``run_all.py``.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import Section, ms, percentile, rate, redis_server
from benchmarks.micro.dispatch import fill, promote_all

RUNS = 2000
TOPIC = "bench.job"


def backlog(url: str, size: int) -> sd.Queue:
    """A new queue with ``size`` ready jobs."""
    queue = sd.Queue(f"pull{uuid.uuid4().hex[:8]}", url=url)
    fill(queue, size, "j", 0)
    time.sleep(0.01)  # every job due
    asyncio.run(promote_all(queue.config, size))
    return queue


def pair_latency(queue: sd.Queue, runs: int) -> list[float]:
    """Wall ms of ``reserve()`` + ``ack()`` of one job, ``runs`` times (after a warm-up)."""
    queue.reserve(TOPIC)[0].ack()
    figures = []
    for _ in range(runs):
        began = time.perf_counter()
        [r] = queue.reserve(TOPIC)
        r.ack()
        figures.append((time.perf_counter() - began) * 1000)
    return figures


def drain_sync(queue: sd.Queue) -> tuple[int, float]:
    """Jobs settled and seconds taken by one consumer reserving 100 at a time."""
    done, began = 0, time.perf_counter()
    while got := queue.reserve(TOPIC, count=100):
        for r in got:
            r.ack()
        done += len(got)
    return done, time.perf_counter() - began


async def drain_async(url: str, name: str, tasks: int = 8) -> tuple[int, float]:
    """Jobs settled and seconds taken by ``tasks`` consumers of one AsyncQueue."""
    async with sd.AsyncQueue(name, url=url) as queue:
        counts = [0] * tasks

        async def consume(i: int) -> None:
            while got := await queue.reserve(TOPIC, consumer=f"c{i}", count=10):
                for r in got:
                    await r.ack()
                counts[i] += len(got)

        began = time.perf_counter()
        await asyncio.gather(*(consume(i) for i in range(tasks)))
        return sum(counts), time.perf_counter() - began


def section(size: int = 20_000) -> Section:
    """Run the three measurements on a private redis-server; the report section."""
    rows: list[list[str]] = []
    with redis_server() as server:
        queue = backlog(server.url, max(size, RUNS + 1))
        figures = pair_latency(queue, RUNS)
        rows.append(["reserve() + ack(), one job, sync", f"{RUNS:,}",
                     f"p50 {ms(percentile(figures, 50))}, p99 {ms(percentile(figures, 99))}",
                     rate(RUNS, sum(figures) / 1000)])
        queue.close()
        queue = backlog(server.url, size)
        done, seconds = drain_sync(queue)
        rows.append(["reserve(count=100) + ack() each, sync", f"{done:,}", ms(seconds * 1000),
                     rate(done, seconds)])
        queue.close()
        queue = backlog(server.url, size)
        done, seconds = asyncio.run(drain_async(server.url, queue.name))
        rows.append(["8 async tasks, reserve(count=10) + ack()", f"{done:,}",
                     ms(seconds * 1000), rate(done, seconds)])
        queue.close()
    return Section("Pull API: reserve and ack (library, one process)",
                   ["what", "jobs", "time (ms)", "jobs/s"], rows,
                   notes=["A ready backlog on one redis-server; wall clock in one client "
                          "process (docs/pull.md)."])


if __name__ == "__main__":
    section(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000).print()
