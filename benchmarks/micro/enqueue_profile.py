"""The producer's enqueue paths under py-spy: flame graphs for docs/benchmarks.md.

``single`` runs ``Queue.enqueue`` one job per call, ``many`` runs ``Queue.enqueue_many`` in lists
of 1,000, each against its own private Redis, under ``py-spy record`` (500 Hz, idle samples left
out, so the graph is the producer's CPU, not its waits on Redis).
Run: ``.venv/bin/python benchmarks/micro/enqueue_profile.py single|many OUT.svg|OUT.txt
[--jobs N]``; with ``--run`` it only runs the workload (what py-spy starts).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import redis_server

BODY = {"order_id": 42, "pad": "x" * 80}  # the body of benchmarks/micro/enqueue.py
DELAY = 3600.0


def workload(mode: str, jobs: int) -> None:
    """``jobs`` enqueues of ``mode`` on a private Redis."""
    with redis_server() as server:
        queue = sd.Queue("enq", url=server.url)
        queue.enqueue("bench.job", BODY, delay=DELAY, id="warm-up")
        if mode == "single":
            for i in range(jobs):
                queue.enqueue("bench.job", BODY, delay=DELAY, id=f"s{i}")
        else:
            for first in range(0, jobs, 1000):
                queue.enqueue_many([sd.JobSpec("bench.job", BODY, delay=DELAY, id=f"m{i}")
                                    for i in range(first, min(jobs, first + 1000))])
        queue.close()


def main() -> None:
    """Command line entry point: record the workload with py-spy, or (``--run``) run it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["single", "many"])
    parser.add_argument("out", nargs="?", default="")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--run", action="store_true")
    args = parser.parse_args()
    jobs = args.jobs or (15_000 if args.mode == "single" else 100_000)
    if args.run:
        workload(args.mode, jobs)
        return
    py_spy = Path(sys.executable).parent / "py-spy"
    kind = "raw" if args.out.endswith(".txt") else "flamegraph"  # .txt: collapsed stacks
    subprocess.run([str(py_spy), "record", "--rate", "500", "--format", kind,
                    "--output", args.out, "--", sys.executable, __file__, args.mode,
                    "--jobs", str(jobs), "--run"], check=True)


if __name__ == "__main__":
    main()
