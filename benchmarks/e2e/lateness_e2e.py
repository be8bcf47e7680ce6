"""End-to-end lateness: 2,000 jobs due over 5 s, ~100 cancelled, two ``streamdelay worker``s.

Checks the guarantees on the way (every job handled exactly once, none early, no cancelled job
handled) and reports lateness = handler start - due, both on the Redis server clock:

- ``lateness``: handler start (local clock + offset measured against Redis ``TIME``) - due;
- ``promote``: the stream entry id's time (set by ``XADD`` inside ``promoteDue``, exact server
  clock) - due, i.e. the dispatcher's share;
- ``pickup``: handler start - stream entry time, i.e. the reader's and handler start's share.

Run: ``.venv/bin/python benchmarks/e2e/lateness_e2e.py [--jobs 2000 --spread 5 --cancel 100]``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import (
    Section,
    Workers,
    ms,
    percentile,
    rate,
    redis_server,
    verdict,
)

TARGET_P99_MS = 10.0


@dataclass(frozen=True)
class HandlerRecord:
    """One handler start as the bench worker recorded it."""

    job_id: str
    start_ms: float
    due_ms: int
    entry_ms: int
    attempt: int
    pid: int


@dataclass
class Verdict:
    """What the records say about one run."""

    handled: int
    duplicates: int
    missing: int
    early: int
    early_promoted: int
    cancelled_handled: int
    lateness: list[float]
    promote: list[float]
    pickup: list[float]
    min_lateness: float
    clock_error_ms: float

    @property
    def correct(self) -> bool:
        """Every job once, none early, no cancelled one."""
        return not (self.duplicates or self.missing or self.early or self.early_promoted
                    or self.cancelled_handled)


def records_key(queue: str) -> str:
    """The list the bench workers append their records to."""
    return f"bench:records:{queue}"


def read_records(client: redis.Redis, queue: str) -> list[HandlerRecord]:
    """Every record pushed so far."""
    found = []
    for raw in client.lrange(records_key(queue), 0, -1):
        job_id, start, due, entry, attempt, pid = raw.decode().split("|")
        found.append(HandlerRecord(job_id, float(start), int(due), int(entry.split("-")[0]),
                                   int(attempt), int(pid)))
    return found


def clock_error_ms(client: redis.Redis) -> float:
    """The largest clock-offset error bound any bench worker measured (half its best RTT)."""
    bounds = [float(v.decode().split("|")[1]) for k in client.scan_iter("bench:offset:*")
              if (v := client.get(k)) is not None]
    return max(bounds, default=0.0)


def wait_for_records(client: redis.Redis, queue: str, count: int, deadline: float,
                     workers: Workers) -> None:
    """Wait until ``count`` records arrived (or the deadline), then a little more for extras."""
    while time.monotonic() < deadline and client.llen(records_key(queue)) < count:
        workers.check_alive()
        time.sleep(0.05)
    time.sleep(1.0)  # a duplicate delivery would show up here


def judge(records: list[HandlerRecord], expected: set[str], cancelled: set[str],
          error_ms: float) -> Verdict:
    """Check the records against the jobs that should (and should not) have run."""
    seen: dict[str, HandlerRecord] = {}
    duplicates = 0
    for record in records:
        if record.job_id in seen:
            duplicates += 1
        else:
            seen[record.job_id] = record
    lateness = [r.start_ms - r.due_ms for r in seen.values()]
    return Verdict(
        handled=len(seen),
        duplicates=duplicates,
        missing=len(expected - seen.keys()),
        early=sum(1 for late in lateness if late < -error_ms),
        early_promoted=sum(1 for r in seen.values() if r.entry_ms < r.due_ms),
        cancelled_handled=len(cancelled & seen.keys()),
        lateness=lateness,
        promote=[float(r.entry_ms - r.due_ms) for r in seen.values()],
        pickup=[r.start_ms - r.entry_ms for r in seen.values()],
        min_lateness=min(lateness, default=math.nan),
        clock_error_ms=error_ms,
    )


def signed_ms(value: float) -> str:
    """A signed millisecond figure, ``n/a`` when there is none."""
    return "n/a" if math.isnan(value) else f"{value:+.2f}"


def lateness_row(label: str, result: Verdict) -> list[str]:
    """A table row: the label, counts and the lateness percentiles."""
    late, promote, pickup = result.lateness, result.promote, result.pickup
    return [label, str(result.handled), ms(percentile(late, 50)), ms(percentile(late, 99)),
            ms(max(late, default=float("nan"))), ms(percentile(promote, 99)),
            ms(percentile(pickup, 99)), "yes" if result.correct else
            f"NO (dup {result.duplicates}, missing {result.missing}, early {result.early}/"
            f"{result.early_promoted}, cancelled run {result.cancelled_handled})"]


LATENESS_HEADERS = ["run", "handled", "lateness p50 ms", "p99 ms", "max ms",
                    "promote p99 ms", "pickup p99 ms", "once, none early, no cancelled"]


def run(jobs: int = 2000, spread: float = 5.0, cancels: int = 100, worker_count: int = 2,
        seed: int = 1) -> Section:
    """The standalone end-to-end lateness run; returns its table."""
    rng = random.Random(seed)
    queue = "lateness"
    with redis_server() as server:
        client = server.client()
        with Workers(server.url, queue, worker_count) as workers:
            workers.wait_ready(client)
            producer = sd.Queue(queue, url=server.url)
            delays = [rng.uniform(0.0, spread) for _ in range(jobs)]
            began = time.perf_counter()
            for i, delay in enumerate(delays):
                producer.enqueue("bench.job", {"n": i, "pad": "x" * 80}, delay=delay, id=f"j{i}")
            enqueue_s = time.perf_counter() - began
            late_enough = [f"j{i}" for i, d in enumerate(delays) if d >= spread * 0.6]
            cancelled = {job_id for job_id in rng.sample(late_enough, min(cancels,
                         len(late_enough))) if producer.cancel(job_id)}
            expected = {f"j{i}" for i in range(jobs)} - cancelled
            wait_for_records(client, queue, len(expected), time.monotonic() + spread + 20,
                             workers)
            producer.close()
        result = judge(read_records(client, queue), expected, cancelled, clock_error_ms(client))
    section = Section(
        f"End-to-end lateness: {jobs:,} jobs due over {spread:g} s, {len(cancelled)} cancelled, "
        f"{worker_count} `streamdelay worker` processes",
        LATENESS_HEADERS, [lateness_row("e2e", result)], correct=result.correct)
    section.verdicts = [  # the lateness targets are judged per rate (lateness_rates)
        verdict("every job handled exactly once, none early, no cancelled job run",
                result.correct, f"{result.handled} handled of {len(expected)} expected, "
                f"{result.duplicates} duplicates, {result.missing} missing, "
                f"{result.cancelled_handled} cancelled run, earliest start "
                f"{signed_ms(result.min_lateness)} ms vs due (clock error bound "
                f"{result.clock_error_ms:.2f} ms)"),
    ]
    section.figures = {"handled_e2e": float(result.handled),
                       "early_e2e": float(result.early + result.early_promoted),
                       "min_lateness_e2e": result.min_lateness}
    section.notes = [f"Enqueue (one `Queue.enqueue` call per job, sync): "
                     f"{rate(jobs, enqueue_s)} jobs/s."]
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--spread", type=float, default=5.0)
    parser.add_argument("--cancel", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    section = run(args.jobs, args.spread, args.cancel, args.workers)
    section.print()
    if not section.correct:
        sys.exit(1)


if __name__ == "__main__":
    main()
