"""Workflows (docs/workflows.md): end-to-end time and Redis time per dependency, memory per
waiting child, next to plain jobs.

One private redis-server, one in-process worker (``serve(until_idle=True)``, a no-op handler):

- plain: N plain jobs (``enqueue_many``) run to the end, on a queue that uses no workflow;
- fan-in: a batch of N members with an ``on_complete`` callback, run to the callback's end
  (N parents into one child: a batch, as ``after=`` takes at most 1,000 parents);
- chain: ``chain`` of C jobs, run to the last;
- memory: ``used_memory`` per job of N children waiting for one parent, next to N plain
  delayed jobs.

Redis time is the ``usec`` of the script calls in ``INFO commandstats`` after ``CONFIG
RESETSTAT`` (enqueue, promotion, acks; the worker's reads and idle polling left out), per job. Run:
``.venv/bin/python benchmarks/e2e/workflows.py [--jobs 10000] [--chain 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import Section, redis_server


def _redis_usec(client: redis.Redis) -> float:
    """µs spent in scripts (``EVALSHA``): what enqueue, promotion and settling cost, without
    the worker's idle polling (blocking reads, the idle watch's stats)."""
    stats = client.info("commandstats")
    return sum(float(v["usec"]) for k, v in stats.items() if k.startswith("cmdstat_eval"))


def _drain(queue: sd.Queue, topics: tuple[str, ...]) -> None:
    worker = sd.Worker(queue, group="g", block=0.2, concurrency=64)
    for topic in topics:
        worker.handler(topic)(lambda job: None)
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 600))


def _measure(url: str, name: str, produce: Callable[[sd.Queue], None],
             topics: tuple[str, ...] = ("t",)) -> tuple[float, float]:
    """Seconds from the first enqueue to the end, and Redis µs in all."""
    with sd.Queue(name, url=url) as queue:
        queue.client.config_resetstat()
        began = time.perf_counter()
        produce(queue)
        _drain(queue, topics)
        took = time.perf_counter() - began
        return took, _redis_usec(queue.client)


def _memory(url: str, name: str, jobs: int, waiting: bool) -> float:
    with sd.Queue(name, url=url) as queue:
        queue.enqueue("t", id="parent", delay=3600)
        if waiting:  # the outcome keeping is on from this first workflow call
            queue.enqueue("t", id="first", after=["parent"])
        before = int(queue.client.info("memory")["used_memory"])
        if waiting:
            for i in range(jobs):
                queue.enqueue("t", {"i": i}, id=f"w{i}", after=["parent"])
        else:
            queue.enqueue_many([sd.JobSpec("t", {"i": i}, id=f"w{i}", delay=3600)
                                for i in range(jobs)])
        return (int(queue.client.info("memory")["used_memory"]) - before) / jobs


def run(jobs: int = 10_000, chain: int = 1_000) -> Section:
    """The table: plain, fan-in and chain, time and Redis µs per job; memory per job."""
    rows: list[list[str]] = []
    with redis_server() as server:
        url = server.url
        plain_s, plain_us = _measure(url, "plain", lambda q: q.enqueue_many(
            [sd.JobSpec("t", id=f"p{i}") for i in range(jobs)]))
        fan_s, fan_us = _measure(url, "fanin", lambda q: q.batch(
            [sd.JobSpec("t", id=f"m{i}") for i in range(jobs)], id="b",
            on_complete=sd.JobSpec("cb")), ("t", "cb"))
        chain_s, chain_us = _measure(url, "chain", lambda q: q.chain(
            [sd.JobSpec("t", id=f"c{i}") for i in range(chain)]))
        plain_mem = _memory(url, "mem-plain", jobs, False)
        wait_mem = _memory(url, "mem-wait", jobs, True)
    per_plain = plain_us / jobs
    rows.append([f"{jobs:,} plain jobs", f"{plain_s:.2f} s", f"{per_plain:.1f}", "-"])
    rows.append([f"batch of {jobs:,} (fan-in) + callback", f"{fan_s:.2f} s",
                 f"{fan_us / (jobs + 1):.1f}", f"{fan_us / (jobs + 1) - per_plain:+.1f}"])
    rows.append([f"chain of {chain:,}", f"{chain_s:.2f} s", f"{chain_us / chain:.1f}",
                 f"{chain_us / chain - per_plain:+.1f}"])
    return Section(
        "Workflows: fan-in, chain and waiting children (docs/workflows.md)",
        ["run", "end to end", "script µs per job", "per dependency vs plain"], rows,
        notes=[f"Memory: a job waiting for one parent {wait_mem:.0f} B, a plain delayed job "
               f"{plain_mem:.0f} B (used_memory per job, {jobs:,} jobs).",
               "A chain's end-to-end time is one dispatcher hand-over per link: each link "
               "becomes due when the one before is acknowledged."],
        figures={"fan_in_s": fan_s, "chain_s": chain_s, "waiting_bytes": wait_mem})


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--chain", type=int, default=1_000)
    args = parser.parse_args()
    run(args.jobs, args.chain).print()


if __name__ == "__main__":
    main()
