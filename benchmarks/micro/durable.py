"""Durable calls: what ``replicas=1`` (``WAIT 1`` in the same pipeline) costs, next to
``replicas=0``, on one primary with one local replica (docs/guarantees.md#durability).

Three shapes, each with ``replicas=0`` and ``replicas=1`` on the same servers: single
``Queue.enqueue`` calls one after the other, ``Queue.enqueue_many`` of ``BATCH`` jobs, and an
``AsyncQueue`` with ``CALLERS`` concurrent callers (coalesced rounds). Throughput in jobs/s and
the latency of each call (p50/p99). The replica runs on the same machine: on a network the
replica's round trip adds to every durable call.
Run: ``.venv/bin/python benchmarks/micro/durable.py [--single 2000 --many 20000 --callers 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import Section, percentile, rate, redis_server
from tests.support.redis_server import RedisServer, wait_until

BATCH = 100  # jobs per enqueue_many call
WAIT_S = 1.0  # replica_timeout: far above the local replica's lag


def _timed(calls: int, one: Callable[[int], object]) -> tuple[float, list[float]]:
    """Run ``one(i)`` ``calls`` times; wall seconds and each call's ms."""
    latencies: list[float] = []
    began = time.perf_counter()
    for i in range(calls):
        start = time.perf_counter()
        one(i)
        latencies.append((time.perf_counter() - start) * 1000)
    return time.perf_counter() - began, latencies


def _single(url: str, replicas: int, n: int) -> tuple[int, float, list[float]]:
    with sd.Queue(f"d{uuid.uuid4().hex[:8]}", url=url, replicas=replicas,
                  replica_timeout=WAIT_S) as queue:
        queue.enqueue("t", 0, id="warm", delay=3600)
        wall, latencies = _timed(n, lambda i: queue.enqueue("t", i, id=f"j{i}", delay=3600))
    return n, wall, latencies


def _many(url: str, replicas: int, n: int) -> tuple[int, float, list[float]]:
    with sd.Queue(f"d{uuid.uuid4().hex[:8]}", url=url, replicas=replicas,
                  replica_timeout=WAIT_S) as queue:
        queue.enqueue("t", 0, id="warm", delay=3600)
        wall, latencies = _timed(n // BATCH, lambda b: queue.enqueue_many(
            [sd.JobSpec("t", i, id=f"j{b}-{i}", delay=3600) for i in range(BATCH)]))
    return n // BATCH * BATCH, wall, latencies


async def _async(url: str, replicas: int, n: int, callers: int
                 ) -> tuple[int, float, list[float]]:
    latencies: list[float] = []
    async with sd.AsyncQueue(f"d{uuid.uuid4().hex[:8]}", url=url, replicas=replicas,
                             replica_timeout=WAIT_S) as queue:
        await queue.enqueue("t", 0, id="warm", delay=3600)
        per_caller = n // callers

        async def caller(c: int) -> None:
            for i in range(per_caller):
                start = time.perf_counter()
                await queue.enqueue("t", i, id=f"c{c}-{i}", delay=3600)
                latencies.append((time.perf_counter() - start) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(caller(c) for c in range(callers)))
        wall = time.perf_counter() - began
    return per_caller * callers, wall, latencies


def _row(shape: str, replicas: int, done: tuple[int, float, list[float]]) -> list[str]:
    jobs, wall, latencies = done
    return [shape, str(replicas), f"{jobs:,}", rate(jobs, wall),
            f"{percentile(latencies, 50):.2f}", f"{percentile(latencies, 99):.2f}"]


def run(single: int = 2000, many: int = 20_000, callers: int = 100) -> Section:
    """Every shape with replicas=0 and 1 on one primary with one local replica."""
    rows: list[list[str]] = []
    figures: dict[str, float] = {}
    with redis_server() as primary:
        replica = RedisServer("--replicaof", "127.0.0.1", str(primary.port)).start()
        try:
            with replica.client() as client:
                wait_until(lambda: client.info("replication")["master_link_status"] == "up",
                           timeout=30)
            shapes: list[tuple[str, Callable[[int], tuple[int, float, list[float]]]]] = [
                ("single `enqueue`", lambda r: _single(primary.url, r, single)),
                (f"`enqueue_many` ({BATCH} per call)", lambda r: _many(primary.url, r, many)),
                (f"`AsyncQueue.enqueue`, {callers} callers",
                 lambda r: _run(_async(primary.url, r, single * 5, callers))),
            ]
            for (shape, measure), key in zip(shapes, ("single", "many", "async"), strict=True):
                for replicas in (0, 1):
                    done = measure(replicas)
                    rows.append(_row(shape, replicas, done))
                    figures[f"durable_{key}_r{replicas}"] = done[0] / done[1]
        finally:
            replica.stop()
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    costs = ", ".join(f"{key} {figures[f'durable_{key}_r1'] / figures[f'durable_{key}_r0']:.0%}"
                      for key in ("single", "many", "async"))
    return Section(
        "Durable calls (`replicas`)",
        ["call", "replicas", "jobs", "jobs/s", "p50 ms per call", "p99 ms per call"], rows,
        figures=figures,
        notes=[f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load} at the end; "
               f"one primary and one replica on this machine (loopback), `replica_timeout` "
               f"{WAIT_S:g} s. `replicas=1` throughput as a share of `replicas=0`: {costs}. "
               f"`WAIT 1` rides in the same pipeline as the script (no extra round trip); what "
               f"it adds is the replica's acknowledgement (docs/guarantees.md#durability)."])


def _run(coroutine: Awaitable[tuple[int, float, list[float]]]) -> tuple[int, float, list[float]]:
    async def wrapped() -> tuple[int, float, list[float]]:
        return await coroutine
    return asyncio.run(wrapped())


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=2000)
    parser.add_argument("--many", type=int, default=20_000)
    parser.add_argument("--callers", type=int, default=100)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    section = run(args.single, args.many, args.callers)
    print(section.markdown() if args.markdown else "", end="")
    if not args.markdown:
        section.print()


if __name__ == "__main__":
    main()
