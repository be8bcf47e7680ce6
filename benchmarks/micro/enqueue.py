"""Enqueue throughput, each next to the raw redis-py ceiling measured in the same run.

- one ``Queue.enqueue`` call per job (sync, one round trip each) vs one ``ZADD`` per call;
- ``Queue.enqueue_many`` in lists of 1,000 vs a pipeline of 1,000 ``ZADD``;
- ``AsyncQueue.enqueue`` from many concurrent callers vs as many concurrent async ``ZADD``.

The first two are measured in short alternating rounds (raw, ours, ours, raw, ...) on the
queue's own client, so both sides see the same machine load; the ratio is the median of the
rounds' ratios (a neighbour's burst moves one round, not the figure), the rates are all jobs
over all time of each side (docs/benchmarks.md).
Every job has a ~100 B JSON body and is due in an hour (nothing is dispatched meanwhile).
Run: ``.venv/bin/python benchmarks/micro/enqueue.py [--single 5000 --many 50000 --callers 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis
import redis.asyncio as aioredis

import streamdelay as sd
from benchmarks.core.harness import Section, rate, redis_cpu_seconds, redis_server

BODY = {"order_id": 42, "pad": "x" * 80}  # ~100 bytes of JSON
DELAY = 3600.0
MANY_BATCH = 1000


SINGLE_ROUNDS = 20  # alternating rounds of the single-call comparison


def _raw_single(client: redis.Redis, start: int, n: int) -> float:
    began = time.perf_counter()
    for i in range(start, start + n):
        client.zadd("raw:single", {f"r{i}": 1e12 + i})
    return time.perf_counter() - began


def _raw_single_held(client: redis.Redis, start: int, n: int) -> float:
    """``ZADD`` round trips on one connection held for the round, packed once each: the same
    connection handling as ``Queue.enqueue``'s held connection (no pool checkout per call)."""
    conn = client.connection_pool.get_connection()
    try:
        began = time.perf_counter()
        for i in range(start, start + n):
            conn.send_packed_command(conn.pack_command("ZADD", "raw:held", 1e12 + i, f"h{i}"))
            conn.read_response()
        return time.perf_counter() - began
    finally:
        client.connection_pool.release(conn)


def _raw_pipelined(client: redis.Redis, start: int, n: int) -> float:
    began = time.perf_counter()
    for first in range(start, start + n, MANY_BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(first, min(start + n, first + MANY_BATCH)):
            pipe.zadd("raw:many", {f"r{i}": 1e12 + i})
        pipe.execute()
    return time.perf_counter() - began


def _sd_single(queue: sd.Queue, start: int, n: int) -> float:
    began = time.perf_counter()
    for i in range(start, start + n):
        queue.enqueue("bench.job", BODY, delay=DELAY, id=f"s{i}")
    return time.perf_counter() - began


def _sd_many(queue: sd.Queue, start: int, n: int) -> float:
    began = time.perf_counter()
    for first in range(start, start + n, MANY_BATCH):
        queue.enqueue_many([sd.JobSpec("bench.job", BODY, delay=DELAY, id=f"m{i}")
                            for i in range(first, min(start + n, first + MANY_BATCH))])
    return time.perf_counter() - began


@dataclass
class Rounds:
    """Alternating rounds of ours against the raw ceiling: totals and each round's ratio."""

    jobs: int
    ours_s: float
    raw_s: float
    cpu_s: float  # Redis CPU during our rounds
    raw_cpu_s: float  # Redis CPU during the raw rounds
    ratios: list[float]  # raw time / our time, per round (our rate / raw rate)

    @property
    def ratio(self) -> float:
        """The median of the rounds' ratios."""
        return statistics.median(self.ratios)

    def spread(self) -> str:
        """The middle half of the rounds' ratios, as ``p25-p75 %``."""
        quarters = statistics.quantiles(self.ratios, n=4) if len(self.ratios) > 1 else self.ratios
        return f"{quarters[0]:.0%}-{quarters[-1]:.0%}"


def alternate(client: redis.Redis, jobs: int, rounds: int,
              raw: Callable[[int, int], float], ours: Callable[[int, int], float]) -> Rounds:
    """``rounds`` rounds of ``jobs // rounds`` each, raw then ours, ours then raw, ...: both
    sides in the same seconds of the same machine (a neighbour's burst hits a round, not a
    side). Job ids continue from round to round."""
    per = max(1, jobs // rounds)
    result = Rounds(per * rounds, 0.0, 0.0, 0.0, 0.0, [])
    for number in range(rounds):
        start = number * per
        times: dict[str, float] = {}
        for side in (("ours", "raw") if number % 2 else ("raw", "ours")):
            cpu = redis_cpu_seconds(client)
            times[side] = (ours if side == "ours" else raw)(start, per)
            cpu = redis_cpu_seconds(client) - cpu
            if side == "ours":
                result.cpu_s += cpu
            else:
                result.raw_cpu_s += cpu
        result.ours_s += times["ours"]
        result.raw_s += times["raw"]
        result.ratios.append(times["raw"] / times["ours"])
    return result


async def _concurrently(callers: int, n: int, one: object) -> float:
    per_caller = n // callers

    async def caller(c: int) -> None:
        for i in range(per_caller):
            await one(c * per_caller + i)  # type: ignore[operator]

    began = time.perf_counter()
    await asyncio.gather(*(caller(c) for c in range(callers)))
    return time.perf_counter() - began


async def _raw_async(url: str, callers: int, n: int) -> float:
    client = aioredis.Redis.from_url(url, max_connections=callers)

    async def one(i: int) -> None:
        await client.zadd("raw:async", {f"a{i}": 1e12 + i})

    try:
        return await _concurrently(callers, n, one)
    finally:
        await client.aclose()


async def _sd_async(url: str, callers: int, n: int) -> float:
    queue = sd.AsyncQueue("enq-async", url=url)

    async def one(i: int) -> None:
        await queue.enqueue("bench.job", BODY, delay=DELAY, id=f"a{i}")

    try:
        await queue.enqueue("bench.job", BODY, delay=DELAY, id="warm-up")
        return await _concurrently(callers, n, one)
    finally:
        await queue.close()


def _row(what: str, n: int, ours: float, raw_what: str, raw: float, share: str,
         cpu: float) -> list[str]:
    return [what, f"{n:,}", rate(n, ours), raw_what, rate(n, raw), share, f"{cpu * 1e6 / n:.1f}"]


def run(single: int = 5000, many: int = 50000, callers: int = 100) -> Section:
    """All three enqueue measurements on one private Redis; returns the table."""
    with redis_server() as server:
        queue = sd.Queue("enq", url=server.url)
        queue.enqueue("bench.job", BODY, delay=DELAY, id="warm-up")  # load scripts, agree P
        client = queue.client  # the raw commands go through the queue's own client and pool
        one = alternate(client, single, SINGLE_ROUNDS, lambda s, n: _raw_single(client, s, n),
                        lambda s, n: _sd_single(queue, s, n))
        held = alternate(client, single, SINGLE_ROUNDS,
                         lambda s, n: _raw_single_held(client, s, n),
                         lambda s, n: _sd_single(queue, s + single, n))
        bulk = alternate(client, many, max(2, many // MANY_BATCH),
                         lambda s, n: _raw_pipelined(client, s, n),
                         lambda s, n: _sd_many(queue, s, n))
        rows = [_row("`Queue.enqueue`, 1 call per job", one.jobs, one.ours_s,
                     "`ZADD`, 1 call each", one.raw_s,
                     f"{one.ratio:.0%} (rounds {one.spread()})", one.cpu_s),
                _row("`Queue.enqueue`, 1 call per job", held.jobs, held.ours_s,
                     "`ZADD` on a held connection, 1 call each", held.raw_s,
                     f"{held.ratio:.0%} (rounds {held.spread()})", held.cpu_s),
                _row(f"`Queue.enqueue_many`, lists of {MANY_BATCH:,}", bulk.jobs, bulk.ours_s,
                     f"pipelined `ZADD` x{MANY_BATCH:,}", bulk.raw_s,
                     f"{bulk.ratio:.0%} (rounds {bulk.spread()})", bulk.cpu_s)]
        measured = {"single": (one.jobs, one.ours_s, one.raw_s, one.cpu_s, one.ratio),
                    "many": (bulk.jobs, bulk.ours_s, bulk.raw_s, bulk.cpu_s, bulk.ratio)}
        n_async = single * 2
        raw = asyncio.run(_raw_async(server.url, callers, n_async))
        cpu = redis_cpu_seconds(client)
        ours = asyncio.run(_sd_async(server.url, callers, n_async))
        cpu = redis_cpu_seconds(client) - cpu
        rows.append(_row(f"`AsyncQueue.enqueue`, {callers} concurrent callers", n_async, ours,
                         f"async `ZADD`, {callers} concurrent", raw, f"{raw / ours:.0%}", cpu))
        measured["async"] = (n_async, ours, raw, cpu, raw / ours)
        queue.close()
    section = Section("Enqueue", ["ours", "jobs", "jobs/s", "raw ceiling", "raw ops/s",
                                  "ours / raw", "Redis CPU µs per job"], rows)
    section.notes.append(
        f"The single and the `enqueue_many` rows alternate with their raw ceiling in "
        f"{SINGLE_ROUNDS} and {max(2, many // MANY_BATCH)} rounds on the queue's own client: "
        "\"ours / raw\" is the median of the rounds' ratios (the middle half of the rounds in "
        "brackets), the rates are all jobs over all time of each side.")
    section.figures["enqueue_single_raw_redis_us"] = one.raw_cpu_s * 1e6 / one.jobs
    section.figures["enqueue_single_held_ratio"] = held.ratio
    section.notes.append(
        "`Queue.enqueue` sends its script on a connection of its pool held aside for it (no "
        "checkout per call, docs/design.md); the second row compares it with raw `ZADD` round "
        "trips handled the same way, the first with redis-py's ordinary `zadd()` call.")
    for name, (n, ours, raw, cpu, share) in measured.items():
        section.figures.update({f"enqueue_{name}": n / ours, f"enqueue_{name}_raw": n / raw,
                                f"enqueue_{name}_ratio": share,
                                f"enqueue_{name}_redis_us": cpu * 1e6 / n})
    section.figures["enqueue_callers"] = float(callers)
    section.figures["enqueue_single_rounds"] = float(SINGLE_ROUNDS)
    section.figures["enqueue_many_rounds"] = float(len(bulk.ratios))
    return section


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=5000)
    parser.add_argument("--many", type=int, default=50000)
    parser.add_argument("--callers", type=int, default=100)
    args = parser.parse_args()
    run(args.single, args.many, args.callers).print()


if __name__ == "__main__":
    main()
