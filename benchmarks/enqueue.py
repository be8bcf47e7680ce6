"""Enqueue throughput, each next to the raw redis-py ceiling measured in the same run.

- one ``Queue.enqueue`` call per job (sync, one round trip each) vs one ``ZADD`` per call;
- ``Queue.enqueue_many`` in lists of 1,000 vs a pipeline of 1,000 ``ZADD``;
- ``AsyncQueue.enqueue`` from many concurrent callers vs as many concurrent async ``ZADD``.

Every job has a ~100 B JSON body and is due in an hour (nothing is dispatched meanwhile).
Run: ``.venv/bin/python benchmarks/enqueue.py [--single 5000 --many 50000 --callers 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
import redis.asyncio as aioredis

import streamdelay as sd
from benchmarks.harness import Section, rate, redis_cpu_seconds, redis_server

BODY = {"order_id": 42, "pad": "x" * 80}  # ~100 bytes of JSON
DELAY = 3600.0
MANY_BATCH = 1000


def _raw_single(client: redis.Redis, n: int) -> float:
    began = time.perf_counter()
    for i in range(n):
        client.zadd("raw:single", {f"r{i}": 1e12 + i})
    return time.perf_counter() - began


def _raw_pipelined(client: redis.Redis, n: int) -> float:
    began = time.perf_counter()
    for start in range(0, n, MANY_BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + MANY_BATCH)):
            pipe.zadd("raw:many", {f"r{i}": 1e12 + i})
        pipe.execute()
    return time.perf_counter() - began


def _sd_single(queue: sd.Queue, n: int) -> float:
    began = time.perf_counter()
    for i in range(n):
        queue.enqueue("bench.job", BODY, delay=DELAY, id=f"s{i}")
    return time.perf_counter() - began


def _sd_many(queue: sd.Queue, n: int) -> float:
    began = time.perf_counter()
    for start in range(0, n, MANY_BATCH):
        queue.enqueue_many([sd.JobSpec("bench.job", BODY, delay=DELAY, id=f"m{i}")
                            for i in range(start, min(n, start + MANY_BATCH))])
    return time.perf_counter() - began


async def _concurrently(callers: int, n: int, one: object) -> float:
    per_caller = n // callers

    async def caller(c: int) -> None:
        for i in range(per_caller):
            await one(c * per_caller + i)  # type: ignore[operator]

    began = time.perf_counter()
    await asyncio.gather(*(caller(c) for c in range(callers)))
    return time.perf_counter() - began


async def _raw_async(url: str, callers: int, n: int) -> float:
    client = aioredis.Redis.from_url(url, max_connections=callers)

    async def one(i: int) -> None:
        await client.zadd("raw:async", {f"a{i}": 1e12 + i})

    try:
        return await _concurrently(callers, n, one)
    finally:
        await client.aclose()


async def _sd_async(url: str, callers: int, n: int) -> float:
    queue = sd.AsyncQueue("enq-async", url=url)

    async def one(i: int) -> None:
        await queue.enqueue("bench.job", BODY, delay=DELAY, id=f"a{i}")

    try:
        await queue.enqueue("bench.job", BODY, delay=DELAY, id="warm-up")
        return await _concurrently(callers, n, one)
    finally:
        await queue.close()


def _row(what: str, n: int, ours: float, raw_what: str, raw: float, cpu: float) -> list[str]:
    return [what, f"{n:,}", rate(n, ours), raw_what, rate(n, raw), f"{ours and raw / ours:.0%}",
            f"{cpu * 1e6 / n:.1f}"]


def run(single: int = 5000, many: int = 50000, callers: int = 100) -> Section:
    """All three enqueue measurements on one private Redis; returns the table."""
    with redis_server() as server:
        client = server.client()
        queue = sd.Queue("enq", url=server.url)
        queue.enqueue("bench.job", BODY, delay=DELAY, id="warm-up")  # load scripts, agree P
        rows = []
        measured: list[tuple[int, float, float, float]] = []  # jobs, ours s, raw s, Redis CPU s
        raw = _raw_single(client, single)
        cpu = redis_cpu_seconds(client)
        ours = _sd_single(queue, single)
        cpu = redis_cpu_seconds(client) - cpu
        rows.append(_row("`Queue.enqueue`, 1 call per job", single, ours,
                         "`ZADD`, 1 call each", raw, cpu))
        measured.append((single, ours, raw, cpu))
        raw = _raw_pipelined(client, many)
        cpu = redis_cpu_seconds(client)
        ours = _sd_many(queue, many)
        cpu = redis_cpu_seconds(client) - cpu
        rows.append(_row(f"`Queue.enqueue_many`, lists of {MANY_BATCH:,}", many, ours,
                         f"pipelined `ZADD` x{MANY_BATCH:,}", raw, cpu))
        measured.append((many, ours, raw, cpu))
        n_async = single * 2
        raw = asyncio.run(_raw_async(server.url, callers, n_async))
        cpu = redis_cpu_seconds(client)
        ours = asyncio.run(_sd_async(server.url, callers, n_async))
        cpu = redis_cpu_seconds(client) - cpu
        rows.append(_row(f"`AsyncQueue.enqueue`, {callers} concurrent callers", n_async, ours,
                         f"async `ZADD`, {callers} concurrent", raw, cpu))
        measured.append((n_async, ours, raw, cpu))
        queue.close()
    section = Section("Enqueue", ["ours", "jobs", "jobs/s", "raw ceiling", "raw ops/s",
                                  "ours / raw", "Redis CPU µs per job"], rows)
    for name, (n, ours, raw, cpu) in zip(("single", "many", "async"), measured, strict=True):
        section.figures.update({f"enqueue_{name}": n / ours, f"enqueue_{name}_raw": n / raw,
                                f"enqueue_{name}_ratio": raw / ours,
                                f"enqueue_{name}_redis_us": cpu * 1e6 / n})
    section.figures["enqueue_callers"] = float(callers)
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=5000)
    parser.add_argument("--many", type=int, default=50000)
    parser.add_argument("--callers", type=int, default=100)
    args = parser.parse_args()
    run(args.single, args.many, args.callers).print()


if __name__ == "__main__":
    main()
