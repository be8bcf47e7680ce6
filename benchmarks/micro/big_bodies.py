"""Big bodies: how long one script call carrying job data blocks Redis (SLOWLOG, per call).

For each body size, N jobs with raw-bytes bodies of that size go in with one ``enqueue_many``
and come out with ``promoteDue`` calls (the real ``Dispatcher.promote_once``, so whatever batch
and byte budget the dispatcher passes); then a real in-process ``Worker`` runs them (every
other job fails for good: ``ackJobs`` and ``failJob`` calls) and ``dead_replay`` puts the dead
ones back (``replayDead``). Redis logs every call (``slowlog-log-slower-than 0``).
A call over ~1 ms delays every other client of that Redis (heartbeats included).
Run: ``.venv/bin/python benchmarks/micro/big_bodies.py [--jobs 150 --sizes 65536 1048576]``;
``--markdown`` prints the table for docs/benchmarks-big-bodies.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import (
    SLOWLOG_ALL,
    Section,
    keys_of,
    percentile,
    redis_server,
    script_times,
)
from streamdelay.dispatch.dispatcher import Dispatcher
from streamdelay.protocol.scripts import load_scripts

QUEUE = "big"
SCRIPTS = ("enqueueJobs", "promoteDue", "ackJobs", "failJob", "replayDead")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n >> 10} KiB"


async def _promote_all(queue: sd.Queue, jobs: int) -> int:
    """Promote until ``jobs`` jobs are in the stream (at least one call: with ``jobs`` 0 it
    loads the script); returns how many calls it took."""
    dispatcher = Dispatcher(queue.config)
    calls, moved = 0, 0
    try:
        while calls == 0 or moved < jobs:
            result = await dispatcher.promote_once(keys_of(QUEUE))
            calls += 1
            moved += result.moved
            if result.moved == 0:
                await asyncio.sleep(0.01)  # not due yet by the server clock
    finally:
        await dispatcher.close()
    return calls


def _work_off(queue: sd.Queue) -> None:
    """Run every job with a real worker: even ids are acknowledged, odd ones fail for good."""
    worker = sd.Worker(queue, block=0.05, dispatch=False)

    @worker.handler("big.job")
    async def handle(job: sd.Job) -> None:
        if int(job.id[1:]) % 2:
            raise RuntimeError("dead on purpose")

    worker.run(until_idle=True)


def measure(body_bytes: int, jobs: int) -> list[list[str]]:
    """Rows (one per script) for ``jobs`` bodies of ``body_bytes`` on a fresh Redis."""
    with redis_server(*SLOWLOG_ALL) as server:
        client = server.client()
        queue = sd.Queue(QUEUE, url=server.url, max_body_bytes=max(body_bytes, 1 << 20))
        queue.enqueue("warm", b"warm", id="warm-up", delay=3600)  # scripts loaded
        asyncio.run(_promote_all(queue, 0))
        for loaded in load_scripts().values():  # no NOSCRIPT entries in the log
            client.script_load(loaded.source)
        client.slowlog_reset()
        body = b"b" * body_bytes
        began = time.perf_counter()
        queue.enqueue_many([sd.JobSpec("big.job", body, id=f"j{i}", max_attempts=1)
                            for i in range(jobs)])
        enqueue_s = time.perf_counter() - began
        began = time.perf_counter()
        asyncio.run(_promote_all(queue, jobs))
        promote_s = time.perf_counter() - began
        began = time.perf_counter()
        _work_off(queue)
        work_s = time.perf_counter() - began
        began = time.perf_counter()
        queue.dead_replay()
        replay_s = time.perf_counter() - began
        times = script_times(client)
        queue.close()
        client.close()
    rows = []
    walls = (enqueue_s, promote_s, work_s, work_s, replay_s)
    carried = (jobs, jobs, jobs - jobs // 2, jobs // 2, jobs // 2)
    for name, wall, count in zip(SCRIPTS, walls, carried, strict=True):
        durations = times.get(name, [])
        rows.append([_size(body_bytes), f"{count:,}", f"`{name}`", str(len(durations)),
                     f"{count / max(len(durations), 1):.1f}",
                     f"{percentile(durations, 50) / 1000:,.2f}" if durations else "-",
                     f"{max(durations, default=0) / 1000:,.2f}",
                     f"{sum(durations) / 1000:,.1f}", f"{wall * 1000:,.0f}"])
    return rows


def run(sizes: list[int], jobs: int) -> Section:
    """Every size, each on its own Redis."""
    rows = [row for size in sizes for row in measure(size, jobs)]
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return Section("Big bodies: script call durations (SLOWLOG)",
                   ["body", "jobs", "script", "calls", "jobs per call", "median ms per call",
                    "max ms per call", "Redis ms in all", "client wall ms (worker: both)"], rows,
                   notes=[f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load} "
                          f"at the end. Every call that carries job data is bounded by about "
                          f"1 MiB as well as by count, always at least one job; what is left is "
                          f"the cost of one big job (docs/benchmarks-big-bodies.md)."])


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64 << 10, 1 << 20])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    section = run(args.sizes, args.jobs)
    print(section.markdown() if args.markdown else "", end="")
    if not args.markdown:
        section.print()


if __name__ == "__main__":
    main()
