"""Fairness keys under a hot key's backlog (docs/priorities.md): Jain's fairness index of
per-key throughput, and Redis time per job of a staged topic next to the plain path.

One private redis-server. A staged queue gets ``HOT`` jobs of one key (enqueued first), then
``KEYS`` keys x ``PER_KEY`` jobs; every job is promoted (ready, in the lanes), then one sync
``reserve(count=100)`` consumer drains it, acking each job. The fairness window is the first
``(KEYS + 1) * PER_KEY / 2`` jobs taken: every key still has a backlog then, so a fair take
gives each the same share. Jain's index ``(sum x)^2 / (n * sum x^2)`` over the per-key counts
of that window: 1.0 is perfectly even, ``1/n`` is one key taking everything. The same jobs on a
plain topic (no key: arrival order, the tenant only in the body) give the baseline.

Redis time is the server's CPU (``INFO cpu``, user + sys) while promoting and while draining,
per job, for the staged queue and for the plain one of the same size.

Run: ``.venv/bin/python benchmarks/e2e/fairness.py [--keys 10000] [--per-key 10] [--hot 100000]``
(the issue's size, several minutes); ``--keys 200 --per-key 10 --hot 2000`` checks it runs.
``section(...)`` returns its report section for ``run_all.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import Section, redis_cpu_seconds, redis_server, verdict
from benchmarks.micro.dispatch import promote_all

TOPIC = "bench.job"
CHUNK = 5000
TARGET = 0.95  # the bar for Jain's index while the hot key is backlogged


def jain(counts: list[int]) -> float:
    """Jain's fairness index of ``counts`` (1.0: all equal)."""
    total, squares = sum(counts), sum(c * c for c in counts)
    return total * total / (len(counts) * squares) if squares else 1.0


def fill(queue: sd.Queue, keys: int, per_key: int, hot: int, keyed: bool) -> int:
    """The hot key's jobs first, then each key's: with ``keyed`` as fairness keys, else plain
    jobs carrying the tenant in the body. Returns how many."""
    specs = [("hot", i) for i in range(hot)] + [
        (f"k{k}", i) for i in range(per_key) for k in range(keys)]
    for start in range(0, len(specs), CHUNK):
        queue.enqueue_many([
            sd.JobSpec(TOPIC, {"t": tenant}, id=f"{tenant}-{i}", key=tenant if keyed else None)
            for tenant, i in specs[start:start + CHUNK]])
    return len(specs)


def tenant_of(r: sd.Reservation) -> str:
    """The tenant of a reserved job: its key (``{key}id``), else its body's ``t``."""
    if r.id.startswith("{"):
        return r.id[1:r.id.index("}")]
    return str(r.body["t"])


def drain(queue: sd.Queue, window: int) -> tuple[Counter[str], int, float]:
    """Reserve and ack everything: the per-tenant counts of the first ``window`` jobs, the
    jobs drained and the seconds it took."""
    seen: Counter[str] = Counter()
    done, began = 0, time.perf_counter()
    queue.reserve(TOPIC, group="bench", consumer="c")  # registers; the staged flag is read
    while got := queue.reserve(TOPIC, group="bench", consumer="c", count=100):
        for r in got:
            if done < window:
                seen[tenant_of(r)] += 1
            done += 1
            r.ack()
    return seen, done, time.perf_counter() - began


def run_one(url: str, keys: int, per_key: int, hot: int, keyed: bool) -> dict[str, float]:
    """One queue, staged (``keyed``) or plain: fairness and Redis µs per job."""
    import redis

    client = redis.Redis.from_url(url)
    queue = sd.Queue(f"fair{uuid.uuid4().hex[:8]}", url=url)
    n = fill(queue, keys, per_key, hot, keyed)
    time.sleep(0.01)
    cpu0 = redis_cpu_seconds(client)
    asyncio.run(promote_all(queue.config, n))
    cpu1 = redis_cpu_seconds(client)
    window = (keys + 1) * per_key // 2
    seen, done, seconds = drain(queue, window)
    cpu2 = redis_cpu_seconds(client)
    counts = [seen.get("hot", 0)] + [seen.get(f"k{k}", 0) for k in range(keys)]
    queue.close()
    client.close()
    return {"jobs": done, "jain": jain(counts), "hot_share": counts[0] / max(1, window),
            "promote_us": (cpu1 - cpu0) * 1e6 / n, "drain_us": (cpu2 - cpu1) * 1e6 / n,
            "rate": done / seconds}


def section(keys: int = 10_000, per_key: int = 10, hot: int = 100_000) -> Section:
    """The report section: staged and plain at the given size."""
    with redis_server() as server:
        staged = run_one(server.url, keys, per_key, hot, True)
        plain = run_one(server.url, keys, per_key, hot, False)
    window = (keys + 1) * per_key // 2
    s = Section(f"Fairness keys: {keys:,} keys x {per_key} jobs and one key x {hot:,} "
                f"(benchmarks/e2e/fairness.py)",
                ["path", f"Jain's index, first {window:,} jobs", "hot key's share",
                 "promote µs/job", "reserve+ack µs/job", "drain jobs/s"],
                [[name, f"{r['jain']:.4f}", f"{r['hot_share']:.1%}", f"{r['promote_us']:.1f}",
                  f"{r['drain_us']:.1f}", f"{r['rate']:,.0f}"]
                 for name, r in (("staged (keys)", staged), ("plain (arrival order)", plain))])
    s.verdicts.append(verdict(f"Jain's index >= {TARGET} while the hot key is backlogged",
                              staged["jain"] >= TARGET, f"{staged['jain']:.3f}"))
    s.notes.append("Redis µs: the server's CPU (INFO cpu) per job; one sync reserve(count=100) "
                   "consumer acking each job.")
    s.figures.update({"fairness_jain": staged["jain"], "staged_drain_us": staged["drain_us"],
                      "plain_drain_us": plain["drain_us"]})
    return s


def main() -> None:
    """Run at the size given on the command line and print the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--per-key", type=int, default=10)
    parser.add_argument("--hot", type=int, default=100_000)
    args = parser.parse_args()
    section(args.keys, args.per_key, args.hot).print()


if __name__ == "__main__":
    main()
