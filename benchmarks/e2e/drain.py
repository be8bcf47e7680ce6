"""Drain: N jobs due at the same instant, end-to-end jobs/s with 1 and 2 worker processes.

The workers (``streamdelay worker benchmarks.e2e.bench_app:worker``, async no-op handler, embedded
dispatchers) are started and idle first; then N jobs are enqueued with ``enqueue_many``, all due
at one instant T0 a little later. The clock runs from T0 until the last job is acknowledged
(the jobs hash is empty). The raw ceiling of the same run: one redis-py process consuming N
stream entries with pipelined ``XREADGROUP COUNT 100`` + ``XACK`` + ``XDEL``, the least any
consumer of these streams has to do.

Run: ``.venv/bin/python benchmarks/e2e/drain.py [--jobs 10000] [--processes 1 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import (
    SLOWLOG_ALL,
    Section,
    Workers,
    keys_of,
    measure_clock_offset,
    percentile,
    rate,
    redis_server,
    script_times,
    server_now_ms,
    wait_drained,
)

BODY = {"order_id": 42, "pad": "x" * 80}
CHUNK = 10_000
BOUNDED = ("enqueueJobs", "promoteDue", "ackJobs")  # the scripts that take batches


def raw_consume(client: redis.Redis, n: int, record: bytes) -> float:
    """Seconds for one redis-py process to read, ack and delete ``n`` pre-filled entries."""
    for start in range(0, n, 1000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(n, start + 1000)):
            pipe.xadd("raw:s", {"id": f"j{i}", "rec": record})
        pipe.execute()
    client.xgroup_create("raw:s", "g", id="0")
    done = 0
    began = time.perf_counter()
    while done < n:
        reply = client.xreadgroup("g", "c", {"raw:s": ">"}, count=100)
        ids = [entry_id for _, entries in reply for entry_id, _ in entries]
        pipe = client.pipeline(transaction=False)
        pipe.xack("raw:s", "g", *ids)
        pipe.xdel("raw:s", *ids)
        pipe.execute()
        done += len(ids)
    return time.perf_counter() - began


def drain_once(url: str, client: redis.Redis, jobs: int, processes: int,
               concurrency: int) -> tuple[float, float, float]:
    """(seconds from T0 to the last ack, Redis CPU s, enqueue s) for one drain."""
    name = f"drain{processes}"
    jobs_key = keys_of(name).jobs
    with Workers(url, name, processes, mode="noop", concurrency=concurrency) as workers:
        workers.wait_ready(client)
        queue = sd.Queue(name, url=url)
        queue.migrate()  # one release only: layout 2 (docs/keys.md#fleet)
        offset_ms, _ = measure_clock_offset(client)
        lead_s = 2.0 + jobs / 10_000  # enqueue_many runs at ~20k/s on busy cores
        due_at_ms = server_now_ms(client) + lead_s * 1000
        began = time.perf_counter()
        for start in range(0, jobs, CHUNK):
            queue.enqueue_many([sd.JobSpec("bench.job", BODY, at=due_at_ms / 1000, id=f"j{i}")
                                for i in range(start, min(jobs, start + CHUNK))])
        enqueue_s = time.perf_counter() - began
        queue.close()
        if server_now_ms(client) >= due_at_ms:
            raise RuntimeError("enqueueing took longer than the lead; raise lead_s")
        elapsed, cpu = wait_drained(client, jobs_key, due_at_ms, offset_ms, workers)
    return elapsed, cpu, enqueue_s


def run(jobs: int = 10_000, processes: tuple[int, ...] = (1, 2), concurrency: int = 64
        ) -> Section:
    """Drain ``jobs`` with each worker count; returns the table."""
    rows = []
    figures: dict[str, float] = {}
    with redis_server(*SLOWLOG_ALL) as server:
        client = server.client()
        record = b"d|0|1732300000000|1732300000000|60000|10||bench.job|" + b"x" * 110
        raw = raw_consume(client, jobs, record)
        for count in processes:
            elapsed, cpu, _ = drain_once(server.url, client, jobs, count, concurrency)
            figures[f"drain_{jobs}_{count}p"] = jobs / elapsed
            figures[f"drain_{jobs}_{count}p_redis_us"] = cpu * 1e6 / jobs
            rows.append([f"{jobs:,}", str(count), rate(jobs, elapsed), f"{elapsed:.2f}",
                         rate(jobs, raw), f"{raw / elapsed:.0%}",
                         f"{cpu * 1e6 / jobs:.1f}"])
        times = script_times(client)
    figures[f"drain_{jobs}_raw"] = jobs / raw
    section = Section(
        f"Drain: {jobs:,} jobs due at once, async no-op handler, concurrency {concurrency} "
        "per process, embedded dispatchers",
        ["jobs", "worker processes", "end-to-end jobs/s", "seconds", "raw ceiling: 1 process "
         "XREADGROUP+XACK+XDEL, entries/s", "ours / raw", "Redis CPU µs per job"], rows,
        figures=figures)
    section.notes = ["Redis time per call over the whole run (SLOWLOG, µs; workers and Redis "
                     "share 2 cores here, so a call's wall time includes being descheduled): "
                     + "; ".join(
        f"`{name}` median {percentile(d, 50):,.0f}, p99 {percentile(d, 99):,.0f}, max {max(d):,}"
        f" ({len(d)} calls)" for name, d in sorted(times.items()) if name in BOUNDED)]
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    run(args.jobs, tuple(args.processes), args.concurrency).print()


if __name__ == "__main__":
    main()
