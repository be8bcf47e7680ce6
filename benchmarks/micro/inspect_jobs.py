"""How long one page of ``Queue.jobs`` takes on a large delayed backlog.

One private redis-server; ``SIZE`` far-future jobs of topic ``bench.job`` are added with
``enqueue_many`` (many share a due ms, so the cursor's tie search runs), plus 10 jobs of topic
``rare`` due after all of them. Then, 30 times each, wall ms of: the first page (100 jobs), a
page from a cursor in the middle of the backlog, and the first page filtered to ``rare`` (1,000
members examined, none of them ``rare``: an empty page with a cursor). Also the Redis-side
µs of one ``listJobs`` call (``INFO commandstats``, evalsha).

Run: ``.venv/bin/python benchmarks/micro/inspect_jobs.py [SIZE]`` (default 1,000,000); a section of
every ``make bench`` report (1M; 10M with ``--full``), earlier figures in
docs/benchmarks-inspect.md.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import Section, keys_of, redis_server, versions
from benchmarks.micro.dispatch import FAR, fill

RUNS = 30


def timed(action: Callable[[], sd.JobPage]) -> tuple[list[float], sd.JobPage]:
    """Wall ms of ``RUNS`` calls of ``action`` (after one warm-up call) and its last page."""
    page = action()
    figures = []
    for _ in range(RUNS):
        began = time.perf_counter()
        page = action()
        figures.append((time.perf_counter() - began) * 1000)
    return figures, page


def evalsha_usec(client: redis.Redis) -> float:
    """Redis' own total µs spent in EVALSHA so far."""
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0))


def show(name: str, figures: list[float], page: sd.JobPage) -> None:
    """One line: median, p90 and max wall ms and what the page held."""
    figures = sorted(figures)
    print(f"{name:<34} median {statistics.median(figures):7.2f} ms  "
          f"p90 {figures[int(len(figures) * 0.9) - 1]:7.2f} ms  max {figures[-1]:7.2f} ms  "
          f"jobs {len(page.jobs):4d}  cursor {'yes' if page.cursor else 'no'}")


def row(name: str, figures: list[float], page: sd.JobPage) -> list[str]:
    """A report row: median, p90 and max wall ms and what the page held."""
    figures = sorted(figures)
    return [name, f"{statistics.median(figures):.2f}",
            f"{figures[int(len(figures) * 0.9) - 1]:.2f}", f"{figures[-1]:.2f}",
            str(len(page.jobs)), "yes" if page.cursor else "no"]


def run(size: int) -> Section:
    """Fill one backlog of ``size`` delayed jobs and time the pages (one report section)."""
    with redis_server() as server:
        client = redis.Redis.from_url(server.url)
        with sd.Queue("inspect", url=server.url) as queue:
            fill_s = fill(queue, size, "b", FAR)
            queue.enqueue_many([sd.JobSpec("rare", i, delay=FAR * 2, id=f"rare-{i}")
                                for i in range(10)])
            delayed = keys_of("inspect").delayed
            backlog = client.zcard(delayed)
            middle, due = client.zrange(delayed, size // 2, size // 2, withscores=True)[0]
            cursor = f"d:{int(due)}:{middle.decode()}"
            before, calls_before = evalsha_usec(client), client.info("commandstats").get(
                "cmdstat_evalsha", {}).get("calls", 0)
            rows = [row("first page, 100 jobs", *timed(lambda: queue.jobs("delayed", limit=100)))]
            server_us = (evalsha_usec(client) - before) / (
                client.info("commandstats")["cmdstat_evalsha"]["calls"] - calls_before)
            rows.append(row("page after a middle cursor, 100 jobs", *timed(
                lambda: queue.jobs("delayed", limit=100, cursor=cursor))))
            rows.append(row("first page of topic 'rare' (1,000 examined)", *timed(
                lambda: queue.jobs("delayed", topic="rare", limit=100))))
            rows.append(row("first page, 1000 jobs", *timed(
                lambda: queue.jobs("delayed", limit=1000))))
        client.close()
    return Section(f"Listing jobs: one page of `Queue.jobs` on a {backlog:,}-job delayed backlog",
                   ["page", "median ms", "p90 ms", "max ms", "jobs", "cursor"], rows,
                   notes=[f"{RUNS} calls each after a warm-up; backlog filled in {fill_s:.1f} s; "
                          f"Redis time of one `listJobs` call (first page, 100 jobs): "
                          f"{server_us:.0f} µs (INFO commandstats)."])


def main() -> None:
    """Fill one backlog of the size given and time the pages."""
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with redis_server() as server:
        client = redis.Redis.from_url(server.url)
        print("versions:", versions(client))
        with sd.Queue("inspect", url=server.url) as queue:
            fill_s = fill(queue, size, "b", FAR)
            queue.enqueue_many([sd.JobSpec("rare", i, delay=FAR * 2, id=f"rare-{i}")
                                for i in range(10)])
            delayed = keys_of("inspect").delayed
            print(f"backlog: {client.zcard(delayed):,} delayed jobs (filled in {fill_s:.1f} s), "
                  f"used_memory {client.info('memory')['used_memory_human']}")
            middle, due = client.zrange(delayed, size // 2, size // 2, withscores=True)[0]
            ties = client.zcount(delayed, due, due)
            cursor = f"d:{int(due)}:{middle.decode()}"
            print(f"middle cursor {cursor} ({ties} jobs share its due ms)")
            before, calls_before = evalsha_usec(client), client.info("commandstats").get(
                "cmdstat_evalsha", {}).get("calls", 0)
            first = timed(lambda: queue.jobs("delayed", limit=100))
            server_us = (evalsha_usec(client) - before) / (
                client.info("commandstats")["cmdstat_evalsha"]["calls"] - calls_before)
            show("first page, 100 jobs", *first)
            show("page after a middle cursor, 100", *timed(
                lambda: queue.jobs("delayed", limit=100, cursor=cursor)))
            show("first page of topic 'rare'", *timed(
                lambda: queue.jobs("delayed", topic="rare", limit=100)))
            show("first page, 1000 jobs", *timed(lambda: queue.jobs("delayed", limit=1000)))
            print(f"redis-side: {server_us:.0f} us per listJobs call (first page, 100 jobs)")


if __name__ == "__main__":
    main()
