"""Redis memory back to baseline after a delayed backlog drains.

Workers start and handle one warm-up job, then stop; ``used_memory`` is the baseline. N jobs
(~100 B bodies) are enqueued with ``enqueue_many`` while no worker (and so no dispatcher) runs,
all due at once: they wait in the delayed set (the peak). The same number of workers start again
and handle every one of them (async no-op handler). When the jobs hash is empty,
``used_memory`` is read again: what the drained backlog left behind.

Run: ``.venv/bin/python benchmarks/e2e/memory_drain.py [--jobs 100000] [--processes 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import Section, Workers, keys_of, redis_server, verdict

BODY = {"order_id": 42, "pad": "x" * 80}
CHUNK = 10_000
SETTLE_S = 2.0  # ack batches and the last promote calls finish
TOLERANCE = 0.01  # "back to baseline": within 1 % of the backlog's own memory (and 1 MiB)


def used_memory(client: redis.Redis) -> int:
    """Redis ``INFO memory`` used_memory."""
    return int(client.info("memory")["used_memory"])


def _wait_empty(client: redis.Redis, key: str, deadline: float, workers: Workers) -> bool:
    while client.hlen(key) > 0:
        if time.monotonic() > deadline:
            return False
        workers.check_alive()
        time.sleep(0.1)
    return True


def run(jobs: int = 100_000, processes: int = 2, timeout: float = 600.0) -> Section:
    """Baseline, peak and after-drain ``used_memory`` for a backlog of ``jobs``."""
    name = "memdrain"
    jobs_key = keys_of(name).jobs
    with redis_server() as server:
        client = server.client()
        queue = sd.Queue(name, url=server.url)
        with Workers(server.url, name, processes, mode="noop") as workers:
            workers.wait_ready(client)
            queue.migrate()  # one release only: layout 2 (docs/keys.md#fleet)
            queue.enqueue("bench.job", BODY, id="warm-up")
            _wait_empty(client, jobs_key, time.monotonic() + 30, workers)
            time.sleep(SETTLE_S)
        baseline = used_memory(client)
        began = time.perf_counter()
        for start in range(0, jobs, CHUNK):
            queue.enqueue_many([sd.JobSpec("bench.job", BODY, id=f"m{i}")
                                for i in range(start, min(jobs, start + CHUNK))])
        fill_s = time.perf_counter() - began
        peak = used_memory(client)
        queue.close()
        with Workers(server.url, name, processes, mode="noop") as workers:
            began = time.perf_counter()
            drained = _wait_empty(client, jobs_key, time.monotonic() + timeout, workers)
            drain_s = time.perf_counter() - began
            time.sleep(SETTLE_S)
        time.sleep(0.5)  # the workers' connections are gone, as for the baseline
        after = used_memory(client)
        keys = client.dbsize()
    grew, left = peak - baseline, after - baseline
    back = drained and left <= max(1 << 20, TOLERANCE * grew)
    return Section(
        f"Memory after a backlog drains: {jobs:,} delayed jobs, {processes} worker processes",
        ["jobs", "baseline used_memory MB", "with the backlog MB", "B per job at peak",
         "after the drain MB", "left behind B", "fill s", "drain s", "keys after"],
        [[f"{jobs:,}", f"{baseline / 1e6:.2f}", f"{peak / 1e6:.2f}", f"{grew / jobs:.0f}",
          f"{after / 1e6:.2f}", f"{left:+,}", f"{fill_s:.1f}",
          f"{drain_s:.1f}" if drained else f"timeout >{timeout:g}", str(keys)]],
        verdicts=[verdict("Redis memory back to baseline after the backlog drains", back,
                          f"{left:+,} B vs baseline after {jobs:,} jobs ({grew / 1e6:.1f} MB "
                          "at peak)", key="target:memory_back")],
        figures={"memory_left": float(left), "memory_grew": float(grew),
                 "memory_back": float(back)})


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    run(args.jobs, args.processes).print()


if __name__ == "__main__":
    main()
