"""Record layout 1 against layout 2 (docs/keys.md#layouts): Redis bytes per job while it waits
in its topic stream, and ``promoteDue``'s Redis time per moved job.

One private redis-server. Each round takes a fresh queue on the given layout (the ``layout``
field of its meta hash), registers the group, enqueues N jobs (~100 B JSON body) due at once
and reads ``used_memory`` (the delayed backlog); then, after ``CONFIG RESETSTAT``, moves them
all into the stream with ``promoteDue`` calls of 150 jobs (what the dispatcher sends) and no
consumer reading: ``used_memory`` again (the ready backlog) and ``INFO commandstats``
(``cmdstat_evalsha``: usec / moved jobs). Layouts alternate round by round (A/B interleaved),
figures are medians. Run: ``.venv/bin/python benchmarks/micro/layout_memory.py [--jobs 10000]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import keys_of, redis_server
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.scripts import script

BODY = {"order_id": 42, "pad": "x" * 80}  # ~100 B of JSON
BATCH = 150  # dispatch/dispatcher.py PROMOTE_BATCH


def one_round(url: str, layout: int, jobs: int, n: int) -> dict[str, float]:
    """One queue on ``layout``: bytes per job delayed and ready, promote µs per job."""
    name = f"layout{layout}-{n}"
    with sd.Queue(name, url=url) as queue:
        c, keys = queue.client, keys_of(name)
        queue.enqueue("t", BODY, id="warm", delay=3600)  # creates the queue (layout 1; set below)
        c.hset(keys.meta, "layout", layout)
        run_step_sync(c, script("registerGroup").call(keys.script_keys(), ["workers", "t"]))
        base = c.info("memory")["used_memory"]
        for s in range(0, jobs, 1000):
            queue.enqueue_many([sd.JobSpec("t", BODY) for _ in range(s, min(s + 1000, jobs))])
        time.sleep(0.05)  # all due by the server clock
        delayed = c.info("memory")["used_memory"]
        c.config_resetstat()
        moved = 0
        call = script("promoteDue").call(keys.script_keys(), [BATCH])
        while moved < jobs:
            moved += run_step_sync(c, call)[0]
        ready = c.info("memory")["used_memory"]
        stat = c.info("commandstats")["cmdstat_evalsha"]
        c.flushall()
        return {"delayed": (delayed - base) / jobs, "ready": (ready - base) / jobs,
                "promote_us": stat["usec"] / moved, "calls": stat["calls"]}


def main() -> None:
    """Alternate the layouts for ``--rounds`` rounds each and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    results: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with redis_server() as server:
        for n in range(args.rounds):
            for layout in ((1, 2) if n % 2 == 0 else (2, 1)):
                results[layout].append(one_round(server.url, layout, args.jobs, n))
    print(f"{args.jobs} jobs, ~100 B body, {args.rounds} rounds per layout, {started}, "
          f"{load} at start, {'{:.2f} {:.2f} {:.2f}'.format(*os.getloadavg())} at end")
    print("| layout | bytes/job delayed | bytes/job ready in stream | promoteDue µs/job |")
    print("|---|---|---|---|")
    for layout, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in ("delayed", "ready", "promote_us")}
        print(f"| {layout} | {med['delayed']:.0f} | {med['ready']:.0f} | {med['promote_us']:.2f} |")
    for layout, rows in results.items():
        print(layout, [(round(r["ready"]), round(r["promote_us"], 2)) for r in rows])


if __name__ == "__main__":
    main()
