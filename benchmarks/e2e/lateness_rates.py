"""Lateness at a steady rate of due jobs: 200, 2,000 and 20,000 due jobs/s.

For each rate R, R x D jobs are enqueued ahead of time (``enqueue_many`` with absolute due times
``T0 + i/R``), then ``--workers`` ``streamdelay worker`` processes (one by default, as the issue-5
targets are for one process) handle them as they fall due. Lateness
= handler start - due on the Redis server clock (see ``lateness_e2e``); never early is checked
from the stream entry ids, which ``promoteDue`` stamps with the server clock. The raw floor of the
same run: the Redis round trip (PING) p50/p99 from this process.

Run: ``.venv/bin/python benchmarks/e2e/lateness_rates.py [--rates 200 2000 20000]``.
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
    LISTED_TARGET,
    Section,
    Workers,
    measured,
    ms,
    percentile,
    redis_server,
    server_now_ms,
    verdict,
)
from benchmarks.core.targets import LATENESS_P99_MS
from benchmarks.e2e.lateness_e2e import (
    LATENESS_HEADERS,
    TARGET_P99_MS,
    Verdict,
    clock_error_ms,
    judge,
    lateness_row,
    read_records,
    wait_for_records,
)

BODY = {"order_id": 42, "pad": "x" * 80}
DURATION = {200: 10.0, 2000: 5.0, 20000: 3.0}
TARGETS_MS = LATENESS_P99_MS  # issue 5: lateness p99 at each rate
CHUNK = 5000
WARM_UP_MS = 500


def ping_rtt_ms(client: redis.Redis, n: int = 2000) -> list[float]:
    """Round trips of ``n`` PINGs in ms."""
    found = []
    for _ in range(n):
        began = time.perf_counter()
        client.ping()
        found.append((time.perf_counter() - began) * 1000)
    return found


def at_rate(url: str, client: redis.Redis, per_second: int, seconds: float,
            worker_count: int, events: bool = False) -> tuple[Verdict, list[float]]:
    """One run at ``per_second`` due jobs/s for ``seconds``: the judged records, and the
    lateness of the jobs due after the first ``WARM_UP_MS`` (the ramp from idle left out).
    ``events``: the queue keeps lifecycle events (docs/events.md), every transition written."""
    name = f"rate{per_second}{'ev' if events else ''}"
    jobs = int(per_second * seconds)
    with Workers(url, name, worker_count) as workers:
        workers.wait_ready(client)
        queue = sd.Queue(name, url=url, events=True) if events else sd.Queue(name, url=url)
        lead_s = 2.0 + jobs / 10_000  # enqueue_many runs at ~20k/s on busy cores
        first_ms = server_now_ms(client) + lead_s * 1000
        for start in range(0, jobs, CHUNK):
            queue.enqueue_many([
                sd.JobSpec("bench.job", BODY, at=(first_ms + i * 1000 / per_second) / 1000,
                           id=f"r{i}") for i in range(start, min(jobs, start + CHUNK))])
        queue.close()
        if server_now_ms(client) >= first_ms:
            raise RuntimeError("enqueueing took longer than the lead; raise lead_s")
        wait_for_records(client, name, jobs, time.monotonic() + lead_s + seconds + 30, workers)
        records = read_records(client, name)
    steady = [r.start_ms - r.due_ms for r in records if r.due_ms >= first_ms + WARM_UP_MS]
    return judge(records, {f"r{i}" for i in range(jobs)}, set(), clock_error_ms(client)), steady


def run(rates: tuple[int, ...] = (200, 2000, 20000), worker_count: int = 1,
        events: bool = False) -> Section:
    """Every rate on one private Redis; returns the table. ``events``: the same with lifecycle
    events on (its figures and checks named apart: ``events_...``)."""
    tag = "events_" if events else ""
    rows = []
    verdicts = []
    figures: dict[str, float] = {}
    correct = True
    with redis_server() as server:
        client = server.client()
        rtt = ping_rtt_ms(client)
        for per_second in rates:
            seconds = DURATION.get(per_second, 5.0)
            result, steady = at_rate(server.url, client, per_second, seconds, worker_count,
                                     events)
            rows.append([*lateness_row(f"{per_second:,} due/s for {seconds:g} s", result),
                         ms(percentile(steady, 99))])
            p99 = percentile(result.lateness, 99)
            target = TARGETS_MS.get(per_second, TARGET_P99_MS)
            figures[f"{tag}lateness_p99_{per_second}"] = p99
            figures[f"{tag}steady_p99_{per_second}"] = percentile(steady, 99)
            figures[f"{tag}promote_p99_{per_second}"] = percentile(result.promote, 99)
            figures[f"{tag}pickup_p99_{per_second}"] = percentile(result.pickup, 99)
            figures[f"{tag}handled_{per_second}"] = float(result.handled)
            figures[f"{tag}early_{per_second}"] = result.early + result.early_promoted
            figures[f"{tag}min_lateness_{per_second}"] = result.min_lateness
            verdicts.append(verdict(f"{per_second:,} due jobs/s"
                                    f"{', lifecycle events on' if events else ''}: lateness p99 <= "
                                    f"{target:g} ms", p99 <= target if measured(p99) else None,
                                    f"p99 {ms(p99)} ms; {ms(percentile(steady, 99))} ms once "
                                    f"past the first {WARM_UP_MS / 1000:g} s",
                                    key=(f"{LISTED_TARGET}events_lateness_{per_second}" if events
                                         else f"target:lateness_{per_second}")))
            correct = correct and result.correct
    section = Section(
        f"Lateness at a steady rate of due jobs ({worker_count} `streamdelay worker` "
        f"process{'es' if worker_count > 1 else ''}, concurrency 64, async handler, embedded "
        f"dispatcher{', lifecycle events on' if events else ''})",
        [*LATENESS_HEADERS, f"p99 ms without the first {WARM_UP_MS / 1000:g} s"], rows,
        verdicts=verdicts, correct=correct, figures=figures)
    if not events:  # the ping of the events-off run is the one the report quotes
        figures["ping_p99"] = percentile(rtt, 99)
    section.notes = [f"Raw floor, same run: Redis round trip (PING) p50 {ms(percentile(rtt, 50))}"
                     f" ms, p99 {ms(percentile(rtt, 99))} ms, max {ms(max(rtt))} ms."]
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[200, 2000, 20000])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--events", action="store_true", help="the queue keeps lifecycle events")
    args = parser.parse_args()
    section = run(tuple(args.rates), args.workers, args.events)
    section.print()
    if not section.correct:
        sys.exit(1)


if __name__ == "__main__":
    main()
