"""Results: how soon a waiter has a job's result after its settle, and what a kept result costs.

Latency: 1,000 jobs (and ``WARMUP`` more, settled first and left out of the figures) are made
ready and read by one consumer (so each has a current delivery); as many concurrent waiters
(``AsyncQueue.result(id, timeout=60)``, one asyncio process, each on its own connection) block
until Redis reports them all blocked. Another process, forked before them, then
settles the jobs one by one, 1 ms apart, each with one ``ackJobs`` call carrying a 100-byte
result (exactly what a worker's ack sends for it). Latency = the waiter's return minus the
moment the settle call was sent (``CLOCK_MONOTONIC``, shared by the processes), so it includes
the settle's own round trip.

Memory: N jobs acknowledged without results, then (after FLUSHALL) the same N acknowledged with
a result of S bytes each, ``keep_result`` 10 min: the ``used_memory`` difference per job, while
the wake lists live (the first seconds after the settle) and after they expired; next to S.

Run: ``.venv/bin/python benchmarks/e2e/results_wait.py [--waiters 1000] [--jobs 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis
import redis.asyncio as aioredis

import streamdelay as sd
from benchmarks.core.harness import Section, keys_of, percentile, redis_server, verdict
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.result_codec import WAKE_MS, encode_result
from streamdelay.protocol.scripts import script

TARGET_P99_MS = 5.0
PAUSE_S = 0.001  # between two settles
# Settled first and left out of the figures: on this host (a microVM) the first wake-ups of a
# process idle in epoll_wait took 8-38 ms however the waiting was done (a redis-py BLPOP and a
# plain LPUSH from another process alike), while a waiter woken from a thread of its own
# process took 0.3 ms: the vCPU's own wake-up, not the queue's (docs/benchmarks.md#results).
WARMUP = 50


def _call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    found = script(name)
    return client.evalsha(found.sha, found.num_keys, *keys.script_keys(), *args)


def _load(client: redis.Redis) -> None:
    for name in ("registerGroup", "promoteDue", "ackJobs"):
        client.script_load(script(name).source)


def _deliveries(url: str, name: str, jobs: int, keep_s: float) -> list[tuple[str, str]]:
    """``jobs`` jobs enqueued, promoted and read by one consumer: (job id, entry id)."""
    client, keys = redis.Redis.from_url(url), keys_of(name)
    _load(client)
    _call(client, "registerGroup", keys, ["g", "t"])
    with sd.Queue(name, url=url, keep_result=keep_s) as q:
        for start in range(0, jobs, 5000):
            q.enqueue_many(sd.JobSpec("t", {"i": i}, id=f"j{i}")
                           for i in range(start, min(jobs, start + 5000)))
    time.sleep(0.01)
    while _call(client, "promoteDue", keys, [1000])[0]:
        pass
    taken: list[tuple[str, str]] = []
    while len(taken) < jobs:
        read = client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=1000)
        taken += [(fields[b"id"].decode(), eid.decode()) for eid, fields in read[0][1]]
    client.close()
    return taken


def _settle(url: str, name: str, taken: list[tuple[str, str]], result: bytes, keep_ms: int,
            pause: float, sent: Any, go: Any, raw: bool = False) -> None:
    """Once ``go`` receives, settle each delivery with one ``ackJobs`` call (``raw``: one
    plain ``LPUSH`` of the value to the key a raw waiter blocks on); report the send times."""
    client, keys = redis.Redis.from_url(url), keys_of(name)
    client.ping()
    go.recv()
    times = []
    for job_id, eid in taken:
        times.append(time.monotonic())
        if raw:
            client.lpush(f"raw:{job_id}", result)
        else:
            # R = 0 (no read times), then the result to keep (docs/keys.md, ackJobs-6)
            _call(client, "ackJobs", keys, ["g", 0, 1, "t", job_id, eid, 0, 1, keep_ms, result])
        if pause:
            time.sleep(pause)
    sent.send(times)
    client.close()


async def _wait_all(url: str, name: str, ids: list[str], client: redis.Redis,
                    go: Any, raw: bool = False) -> dict[str, float]:
    woke: dict[str, float] = {}
    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=len(ids) + 50)
    plain = aioredis.Redis(connection_pool=pool)
    async with sd.AsyncQueue(name, url=url, reserve_connections=len(ids) + 50,
                             keep_result=60) as aq:
        async def wait(job_id: str) -> None:
            if raw:  # the floor: a redis-py BLPOP woken by one LPUSH, nothing of ours
                await plain.blpop([f"raw:{job_id}"], timeout=120)
                woke[job_id] = time.monotonic()
                return
            found = await aq.result(job_id, timeout=120)
            woke[job_id] = time.monotonic()
            assert found is not None and found.value == {"ok": True, "pad": "x" * 80}

        tasks = [asyncio.ensure_future(wait(job_id)) for job_id in ids]
        deadline = time.monotonic() + 60
        while int(client.info("clients")["blocked_clients"]) < len(ids):
            assert time.monotonic() < deadline, "the waiters did not all block"
            await asyncio.sleep(0.05)
        gc.collect()
        gc.freeze()  # what setting up 1,000 waiters allocated is never scanned while they wait
        go.send(True)
        await asyncio.gather(*tasks)
        gc.unfreeze()
    await plain.aclose()
    await pool.disconnect()
    return woke


def latency(waiters: int = 1000, raw: bool = False) -> tuple[list[str], dict[str, float]]:
    """p50/p99/max ms from the settle call's send to the waiter's return (``raw``: the same
    with plain ``BLPOP`` waiters and ``LPUSH`` settles, the floor of this machine now)."""
    with redis_server() as server:
        name = "reswait"
        taken = _deliveries(server.url, name, waiters + WARMUP, 60)
        client = server.client()
        value = encode_result({"ok": True, "pad": "x" * 80}, "json", 1 << 16)
        receiver, sender = multiprocessing.Pipe(duplex=False)
        ready, go = multiprocessing.Pipe(duplex=False)
        # Started (forked) before the waiters exist and told to begin once they all block: a
        # fork while they wait would stall this process on copy-on-write faults for the first
        # tens of ms and add them to the first jobs' latency (seen in both rows before).
        settler = multiprocessing.Process(target=_settle, args=(
            server.url, name, taken, value, 60_000, PAUSE_S, sender, ready, raw))
        settler.start()
        woke = asyncio.run(_wait_all(server.url, name, [t[0] for t in taken], client, go,
                                     raw))
        sent = receiver.recv()
        settler.join(30)
        client.close()
    delays = sorted((woke[job_id] - at) * 1000 for (job_id, _), at in zip(
        taken[WARMUP:], sent[WARMUP:], strict=True))
    p50, p99 = percentile(delays, 50), percentile(delays, 99)
    what = "raw ceiling: redis-py BLPOP woken by LPUSH" if raw else "`Queue.result` (BLMOVE)"
    row = [what, f"{waiters:,}", f"{len(value)}", f"{p50:.2f}", f"{p99:.2f}",
           f"{delays[-1]:.2f}"]
    return row, {"result_p99_ms": p99, "result_p50_ms": p50}


def memory(jobs: int, size: int) -> list[str]:
    """``used_memory`` per job kept with a result of ``size`` bytes (wake lists alive, then
    gone), against the same jobs acknowledged without one."""
    value = encode_result("x" * (size - 3), "json", 1 << 20)  # the JSON string's quotes: 2
    figures = []
    with redis_server() as server:
        client = server.client()
        for keep in (False, True):
            client.flushall()
            taken = _deliveries(server.url, "resmem", jobs, 600 if keep else 0)
            time.sleep(0.2)
            before = int(client.info("memory")["used_memory"])
            _load(client)
            for start in range(0, jobs, 500):
                part = taken[start:start + 500]
                args: list[Any] = ["g", 0, len(part)]
                kept: list[Any] = []
                for position, (job_id, eid) in enumerate(part, 1):
                    args += ["t", job_id, eid]
                    kept += [position, 600_000, value] if keep else []
                _call(client, "ackJobs", keys_of("resmem"), [*args, 0, *kept])  # R = 0
            figures.append(int(client.info("memory")["used_memory"]) - before)
            if keep:
                time.sleep(WAKE_MS / 1000 + 1.5)  # the wake lists expire (active expiry)
                figures.append(int(client.info("memory")["used_memory"]) - before)
        client.close()
    plain, with_wake, kept_only = figures
    return [f"{jobs:,}", str(len(value)), f"{(with_wake - plain) / jobs:,.0f}",
            f"{(kept_only - plain) / jobs:,.0f}"]


def run(waiters: int = 1000, jobs: int = 10_000, sizes: tuple[int, ...] = (100, 1024)
        ) -> Section:
    """Both measures as one section."""
    row, figures = latency(waiters)
    raw_row, _ = latency(waiters, raw=True)
    rows = [memory(jobs, size) for size in sizes]
    p99 = figures["result_p99_ms"]
    return Section(
        f"Results: delivered after the settle ({waiters:,} concurrent waiters), and memory per "
        "kept result {#results}",
        ["waiters", "count", "result B", "p50 ms", "p99 ms", "max ms"], [row, raw_row],
        verdicts=[verdict(f"result delivered <= {TARGET_P99_MS:g} ms p99 after the settle with "
                          f"{waiters:,} concurrent waiters", p99 <= TARGET_P99_MS,
                          f"{p99:.2f} ms", "listed-target:results")],
        notes=["Memory per kept result (`used_memory` difference per job against the same jobs "
               "acknowledged without one; `keep_result` 10 min):", "",
               "| jobs | stored B (format letter + value) | B per result, wake list alive | "
               "B per result, after the wake list expired |", "|---|---|---|---|",
               *("| " + " | ".join(r) + " |" for r in rows)],
        figures=figures)


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waiters", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10_000)
    args = parser.parse_args()
    run(args.waiters, args.jobs).print()


if __name__ == "__main__":
    main()
