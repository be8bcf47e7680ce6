"""Lifecycle events: what ``Queue(..., events=True)`` costs, against the same work with events
off, in the same run (docs/events.md; target: at most 10 % slower).

Two queues on one redis-server, one with events on (field ``events`` of its meta), one off.
Enqueue: one ``enqueue`` call per job and ``enqueue_many`` batches of 1,000, in alternating
rounds (off then on, on then off, ...: 32 rounds of 500 jobs a side for one call per job, 8 of
2,500 for batches), so a neighbour's burst hits a round, not a side; the
figure is the median of the rounds' ratios. Drain: N jobs due at once drained by one worker
process per queue (``benchmarks.e2e.bench_app``, async no-op handler, embedded dispatcher),
both started once and idle between drains, in pairs of one drain a side back to back (the
order alternated), the figure the median of the pairs' ratios (listed in the note: one pair
may read -30 % or +70 % on a 2-core VM whose speed swings within seconds); each drain's events
queue writes enqueued, promoted, started and succeeded per job. Redis CPU per job from
``INFO``'s used_cpu, both sides.

Run: ``.venv/bin/python benchmarks/e2e/events_cost.py [--jobs 5000] [--drains 31]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import (
    Section,
    Workers,
    keys_of,
    measure_clock_offset,
    rate,
    redis_cpu_seconds,
    redis_server,
    server_now_ms,
    verdict,
    wait_drained,
)
from streamdelay.protocol.keys import PartitionKeys

BODY = {"order_id": 42, "pad": "x" * 80}  # ~100 bytes of JSON
BATCH = 1000
TARGET = 0.10  # at most 10 % slower with events on


def _single(queue: sd.Queue, tag: str) -> Callable[[int, int], float]:
    def run(start: int, n: int) -> float:
        began = time.perf_counter()
        for i in range(start, start + n):
            queue.enqueue("bench.job", BODY, delay=3600.0, id=f"{tag}s{i}")
        return time.perf_counter() - began
    return run


def _many(queue: sd.Queue, tag: str) -> Callable[[int, int], float]:
    def run(start: int, n: int) -> float:
        began = time.perf_counter()
        for first in range(start, start + n, BATCH):
            queue.enqueue_many([sd.JobSpec("bench.job", BODY, delay=3600.0, id=f"{tag}m{i}")
                                for i in range(first, min(start + n, first + BATCH))])
        return time.perf_counter() - began
    return run


def alternate(client: redis.Redis, jobs: int, rounds: int, off: Callable[[int, int], float],
              on: Callable[[int, int], float]) -> tuple[float, float, float, float, float]:
    """(off jobs/s, on jobs/s, median on/off time ratio, off and on Redis CPU µs per job)."""
    per = max(1, jobs // rounds)
    totals = {"off": 0.0, "on": 0.0}
    cpu = {"off": 0.0, "on": 0.0}
    ratios = []
    for number in range(rounds):
        times: dict[str, float] = {}
        for side in (("off", "on") if number % 2 == 0 else ("on", "off")):
            before = redis_cpu_seconds(client)
            times[side] = (off if side == "off" else on)(number * per, per)
            cpu[side] += redis_cpu_seconds(client) - before
            totals[side] += times[side]
        ratios.append(times["on"] / times["off"])
    done = per * rounds
    return (done / totals["off"], done / totals["on"], statistics.median(ratios),
            cpu["off"] * 1e6 / done, cpu["on"] * 1e6 / done)


def drain_once(client: redis.Redis, queue: sd.Queue, workers: Workers, jobs: int,
               offset_ms: float) -> tuple[float, float]:
    """(seconds from T0 to the last ack, Redis CPU s) of one drain of ``jobs`` due at once by
    ``queue``'s worker, already started and idle."""
    due_at_ms = server_now_ms(client) + (0.3 + jobs / 10_000) * 1000
    for start in range(0, jobs, 10_000):
        queue.enqueue_many([sd.JobSpec("bench.job", BODY, at=due_at_ms / 1000,
                                       id=f"{queue.name}-{time.time_ns()}-{i}")
                            for i in range(start, min(jobs, start + 10_000))])
    if server_now_ms(client) >= due_at_ms:
        raise RuntimeError("enqueueing took longer than the lead")
    return wait_drained(client, keys_of(queue.name).jobs, due_at_ms, offset_ms, workers)


def drains_in_pairs(url: str, client: redis.Redis, jobs: int, pairs: int
                    ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Drain times and Redis CPU of ``pairs`` pairs of drains, one a side back to back (the
    order alternated), by two worker processes (one per queue) started once: a drain is a
    second or less, so the two of a pair run within about two seconds of each other (this
    machine's speed swings within seconds: one queue's consecutive drains read 0.49 to 0.99 s
    on 2026-11-27) and no drain pays for a process start."""
    times: dict[str, list[float]] = {"droff": [], "dron": []}
    cpu: dict[str, float] = {"droff": 0.0, "dron": 0.0}
    with Workers(url, "droff", 1, mode="noop", concurrency=64) as off_w, \
            Workers(url, "dron", 1, mode="noop", concurrency=64) as on_w, \
            sd.Queue("droff", url=url) as off_q, sd.Queue("dron", url=url) as on_q:
        off_w.wait_ready(client)
        on_w.wait_ready(client)
        offset_ms, _ = measure_clock_offset(client)
        sides = {"droff": (off_q, off_w), "dron": (on_q, on_w)}
        drain_once(client, off_q, off_w, jobs // 10, offset_ms)  # warm both, not counted
        drain_once(client, on_q, on_w, jobs // 10, offset_ms)
        for number in range(pairs):
            for name in (("droff", "dron") if number % 2 == 0 else ("dron", "droff")):
                queue, workers = sides[name]
                elapsed, used = drain_once(client, queue, workers, jobs, offset_ms)
                times[name].append(elapsed)
                cpu[name] += used
    return times, cpu


def _pct(ratio: float) -> str:
    return f"{ratio - 1:+.1%}"


def run(jobs: int = 5_000, drains: int = 31, single: int = 16_000, rounds: int = 8,
        single_rounds: int = 32, many: int = 20_000) -> Section:
    """The events-on / events-off table of one run."""
    rows: list[list[str]] = []
    figures: dict[str, float] = {}
    slowdowns: dict[str, float] = {}
    with redis_server() as server:
        client = server.client()
        url = server.url
        with sd.Queue("evoff", url=url) as off_q, \
                sd.Queue("evon", url=url, events=True) as on_q:
            for q in (off_q, on_q):  # both queues exist; evon's meta says events on
                q.enqueue("warm", 0, id="warm", delay=3600.0)
            # one call per job: short rounds (500 jobs a side), four times as many as batches
            for what, n, count, make in (
                    ("enqueue, 1 call per job", single, single_rounds, _single),
                    (f"enqueue_many, batches of {BATCH:,}", many, rounds, _many)):
                off_rate, on_rate, ratio, off_cpu, on_cpu = alternate(
                    client, n, count, make(off_q, "off"), make(on_q, "on"))
                slowdowns[what] = ratio
                rows.append([what, f"{n:,}", rate(1, 1 / off_rate), rate(1, 1 / on_rate),
                             _pct(ratio), f"{off_cpu:.1f} / {on_cpu:.1f}"])
        for name in ("droff", "dron"):  # the drain queues: created empty, dron with events
            with sd.Queue(name, url=url, events=name == "dron") as q:
                q.enqueue("warm", 0, id="warm", delay=3600.0)
                q.cancel("warm")
        drain_times, drain_cpu = drains_in_pairs(url, client, jobs, drains)
        off_s, on_s = (statistics.median(drain_times[n]) for n in ("droff", "dron"))
        # the median of each pair's ratio: the two drains of a pair run back to back, so a
        # machine that slows down over the run moves both (the medians of the sides do not)
        pairs = sorted(on / off for on, off in zip(drain_times["dron"], drain_times["droff"],
                                                   strict=True))
        ratio = statistics.median(pairs)
        slowdowns["drain"] = ratio
        rows.append([f"drain, {jobs:,} due at once, 1 worker process", f"{jobs:,} x {drains}",
                     rate(jobs, off_s), rate(jobs, on_s), _pct(ratio),
                     f"{drain_cpu['droff'] * 1e6 / (jobs * drains):.1f} / "
                     f"{drain_cpu['dron'] * 1e6 / (jobs * drains):.1f}"])
        kept = client.xlen(PartitionKeys("dron", 0).events)
    for what, value in slowdowns.items():
        figures[f"events_slowdown_{what.split(',')[0].replace(' ', '_')}"] = value - 1
    worst = max(slowdowns.values())
    section = Section(
        "Lifecycle events: on against off, same run {#lifecycle-events}",
        ["workload", "jobs", "events off, jobs/s", "events on, jobs/s", "on vs off (time)",
         "Redis CPU µs per job, off / on"], rows, figures=figures,
        verdicts=[verdict("lifecycle events cost at most 10 % (enqueue and drain)",
                          worst - 1 <= TARGET, f"worst {_pct(worst)}", "events-cost")])
    section.notes = [f"The events queue's stream held {kept:,} entries at the end (bound "
                     f"10,000 per partition, `MAXLEN ~`). Enqueue figures: the median of "
                     f"{single_rounds} (one call per job) and {rounds} (batches) alternating "
                     f"rounds; drain: {drains} pairs of drains (one "
                     "off, one on, back to back, the order alternated), the rates the median "
                     "of each side, the time the median of the pairs' ratios (the pairs: "
                     + ", ".join(_pct(r) for r in pairs) + ")."]
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5_000)
    parser.add_argument("--drains", type=int, default=31)
    args = parser.parse_args()
    run(args.jobs, args.drains).print()


if __name__ == "__main__":
    main()
