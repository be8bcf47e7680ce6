"""Dispatch cost as one delayed backlog grows (10k, 1M, 4M, 8M, 10M), with Redis' rehash state.

One redis-server; far-future jobs are added in steps up to each size, then 10,000 due jobs are
promoted on top by one dispatcher: Redis CPU and wall µs per promoted job at each size. It also
reports whether the jobs hash is in the middle of an incremental rehash (``DEBUG HTSTATS-KEY``),
as Redis' dicts double at each power of two (8,388,608 entries -> 2^24 buckets between 8M and
10M): while both tables are live every lookup probes two and every write moves a bucket.

After the last size, when the jobs hash is still rehashing, the rehash is driven to its end
(``HEXISTS`` of absent fields: every lookup moves one bucket; docs/benchmarks.md, "What bounds
the figures") and the same promotion is measured again: with and without the rehash in flight.

Run: ``.venv/bin/python benchmarks/micro/backlog_ramp.py [SIZE ...]`` (10M needs ~4 GB and ~6 min).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import keys_of, redis_cpu_seconds, redis_server
from benchmarks.micro.dispatch import DUE_JOBS, FAR, fill, promote_all

SIZES = [10_000, 1_000_000, 4_000_000, 8_000_000, 10_000_000]
STEP = 100_000


def rehashing(client: redis.Redis, key: str) -> bool:
    """True while the hash at ``key`` is being rehashed into a bigger table."""
    stats = client.execute_command("DEBUG", "HTSTATS-KEY", key)
    return b"rehashing target" in stats


FINISH_REHASH = """
local n = 0
for i = 1, tonumber(ARGV[1]) do redis.call('HEXISTS', KEYS[1], '~') n = i end
return n
"""


def finish_rehash(client: redis.Redis, key: str) -> int:
    """Look up absent fields of the hash at ``key`` until its rehash is over; the lookups made."""
    made = 0
    while rehashing(client, key):
        made += int(client.eval(FINISH_REHASH, 1, key, 200_000))
    return made


def measure(client: redis.Redis, queue: sd.Queue, label: str, fill_s: float) -> None:
    """Promote DUE_JOBS due jobs on top of the backlog and print one line."""
    fill(queue, DUE_JOBS, f"now{time.monotonic_ns()}-", 0.0)  # a fresh id prefix per round
    cpu = redis_cpu_seconds(client)
    seconds, _ = asyncio.run(promote_all(queue.config, DUE_JOBS))
    cpu = redis_cpu_seconds(client) - cpu
    print(f"backlog {label:>22}: promote {DUE_JOBS / seconds:,.0f} jobs/s, Redis CPU "
          f"{cpu * 1e6 / DUE_JOBS:.1f} µs/job, wall {seconds * 1e6 / DUE_JOBS:.1f} µs/job;"
          f" jobs hash rehashing: {rehashing(client, keys_of('backlog').jobs)}; "
          f"fill {fill_s:.0f} s", flush=True)


def main() -> None:
    """Grow one backlog through the sizes given (or ``SIZES``), print one line per size."""
    sizes = [int(arg) for arg in sys.argv[1:]] or SIZES
    with redis_server("--enable-debug-command", "yes") as server:
        client = server.client()
        queue = sd.Queue("backlog", url=server.url)
        have = 0
        for size in sizes:
            began = time.perf_counter()
            for start in range(have, size, STEP):
                fill(queue, min(STEP, size - start), f"b{start}-", FAR)
            fill_s, have = time.perf_counter() - began, max(have, size)
            measure(client, queue, f"{size:,}", fill_s)
        jobs = keys_of("backlog").jobs
        if rehashing(client, jobs):
            began = time.perf_counter()
            made = finish_rehash(client, jobs)
            print(f"rehash driven to its end: {made:,} lookups in "
                  f"{time.perf_counter() - began:.1f} s", flush=True)
            measure(client, queue, f"{have:,} after rehash", 0.0)
        queue.close()


if __name__ == "__main__":
    main()
