"""How long one call of ``Queue.search`` and a bulk dry run take on a large delayed backlog.

One private redis-server; ``SIZE`` delayed jobs of topic ``bench.job`` with small JSON bodies
(``{"tenant": "t<i % 100>", "n": i}``, so a body filter matches 1 in 100). Then, 30 times
each after a warm-up, wall ms of: one search call by body field (``scan`` 1,000) at the start
of the backlog, the same from a cursor in the middle, one by error text (nothing matches: every
job examined), and one bulk cancel dry run (``scan`` 1,000). Each call examines 1,000 jobs
whatever the backlog.

Run: ``.venv/bin/python benchmarks/micro/search_bulk.py [SIZE]`` (default 1,000,000); figures in
docs/operations.md#search-and-bulk.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import redis_server

RUNS = 30
CHUNK = 5000


def timed(action: Callable[[], Any]) -> tuple[list[float], Any]:
    """Wall ms of ``RUNS`` calls of ``action`` (after one warm-up call) and its last answer."""
    answer = action()
    figures = []
    for _ in range(RUNS):
        began = time.perf_counter()
        answer = action()
        figures.append((time.perf_counter() - began) * 1000)
    return figures, answer


def show(name: str, figures: list[float], examined: int) -> None:
    """One line: median, p90, max wall ms, jobs examined."""
    figures = sorted(figures)
    print(f"| {name} | {statistics.median(figures):.1f} | "
          f"{figures[int(len(figures) * 0.9) - 1]:.1f} | {figures[-1]:.1f} | {examined} |")


def main(size: int) -> None:
    """Fill, then time the calls."""
    with redis_server() as server, sd.Queue("bench", url=server.url) as q:
        began = time.perf_counter()
        for start in range(0, size, CHUNK):
            q.enqueue_many([sd.JobSpec("bench.job", {"tenant": f"t{i % 100}", "n": i},
                                       delay=3600 + i / 1000, id=f"j{i}")
                            for i in range(start, min(size, start + CHUNK))])
        print(f"filled {size:,} delayed jobs in {time.perf_counter() - began:.0f} s")
        middle = None
        cursor = None
        for _ in range(max(1, size // 2000)):  # half way: 1,000 examined per call
            cursor = q.search(state="delayed", scan=1000, cursor=cursor).cursor
        middle = cursor
        print("| call | median ms | p90 ms | max ms | examined |")
        print("|---|---|---|---|---|")
        for name, action in (
            ("search by body field, first call", lambda: q.search(
                state="delayed", body=["tenant=t7"], scan=1000)),
            ("search by body field, from the middle", lambda: q.search(
                state="delayed", body=["tenant=t7"], scan=1000, cursor=middle)),
            ("search by error text (no match)", lambda: q.search(
                state="delayed", error="timeout", scan=1000)),
            ("bulk cancel dry run", lambda: q.bulk(
                "cancel", state="delayed", body=["tenant=t7"], scan=1000, dry_run=True)),
        ):
            figures, answer = timed(action)
            show(name, figures, answer.examined)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
