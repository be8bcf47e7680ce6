"""Scale-out benchmark: one Redis node against a local 3-primary Redis Cluster (docs/scale-out.md).

Starts its own redis-server processes on free loopback ports (never the Redis at 6379) and
measures, for each target:

- enqueue jobs/s with ``enqueue_many`` (batches of 1000, one producer);
- dispatch jobs/s: N jobs already due, one ``Dispatcher`` promotes them into the streams;
- end-to-end jobs/s: N due jobs, W worker processes (no-op handler, embedded dispatchers);
- the raw Redis ceiling of the same run (``redis-benchmark`` SET, pipelined 16);
- Redis memory per delayed job (used_memory delta over all primaries).

Run: ``.venv/bin/python benchmarks/e2e/cluster_bench.py [--jobs 50000] [--memory-jobs 1000000]``.
All processes share this machine's cores, so the cluster cannot be faster than the hardware.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import Section
from streamdelay.dispatch.dispatcher import Dispatcher
from streamdelay.io.agreement import agree_partitions_sync
from tests.support.cluster import LocalCluster
from tests.support.redis_server import RedisServer

BATCH = 1000


@dataclass
class Figures:
    """What one target measured."""

    target: str
    partitions: int
    raw_set_ops: float
    enqueue_jobs_s: float
    dispatch_jobs_s: float
    end_to_end_jobs_s: float
    bytes_per_delayed_job: float
    redis_us_enqueue: float  # Redis CPU (user+sys, all primaries) per job, by phase
    redis_us_dispatch: float
    redis_us_deliver: float  # read + ack (+ the embedded dispatch) in the end-to-end run


def _primaries(target: RedisServer | LocalCluster) -> list[RedisServer]:
    return target.primaries() if isinstance(target, LocalCluster) else [target]


def used_memory(target: RedisServer | LocalCluster) -> int:
    """used_memory summed over the primaries."""
    total = 0
    for node in _primaries(target):
        with node.client() as client:
            total += int(client.info("memory")["used_memory"])
    return total


def redis_cpu(target: RedisServer | LocalCluster) -> float:
    """CPU seconds (user + sys) the primaries have used so far."""
    total = 0.0
    for node in _primaries(target):
        with node.client() as client:
            info = client.info("cpu")
            total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def cpu_per_job(target: RedisServer | LocalCluster, jobs: int, run: Callable[[], float]
                ) -> tuple[float, float]:
    """``run()``'s result and the Redis CPU microseconds it cost per job."""
    before = redis_cpu(target)
    result = run()
    return result, (redis_cpu(target) - before) * 1e6 / jobs


def raw_ceiling(target: RedisServer | LocalCluster) -> float:
    """redis-benchmark SET requests/s (pipelined 16, 50 clients) against the target."""
    port = _primaries(target)[0].port
    cluster = ["--cluster"] if isinstance(target, LocalCluster) else []
    out = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), *cluster, "-t", "set",
         "-n", "300000", "-P", "16", "-q", "-r", "100000"],
        capture_output=True, text=True, timeout=300).stdout
    found = re.findall(r"SET: ([\d.]+) requests per second", out)
    return float(found[-1]) if found else float("nan")


def enqueue_rate(url: str, name: str, partitions: int, jobs: int, delay: float) -> float:
    """Jobs/s of ``enqueue_many`` in batches of ``BATCH``."""
    with sd.Queue(name, url=url, partitions=partitions) as queue:
        # connect and fix the partition count outside the timing
        agree_partitions_sync(queue.client, url, name, partitions, None)
        started = time.perf_counter()
        for start in range(0, jobs, BATCH):
            queue.enqueue_many([sd.JobSpec("t", {"n": i}, delay=delay)
                                for i in range(start, min(jobs, start + BATCH))])
        return jobs / (time.perf_counter() - started)


def dispatch_rate(url: str, name: str, partitions: int, jobs: int) -> float:
    """Jobs/s one dispatcher promotes when ``jobs`` are already due (enqueued beforehand)."""
    config = sd.Queue(name, url=url, partitions=partitions).config

    async def promote_all() -> float:
        dispatcher = Dispatcher(config)
        task = asyncio.ensure_future(dispatcher.run())
        started = time.perf_counter()
        while dispatcher.promoted < jobs:
            await asyncio.sleep(0.005)
        elapsed = time.perf_counter() - started
        dispatcher.stop()
        await task
        await dispatcher.close()
        return elapsed

    return jobs / asyncio.run(promote_all())


async def _noop(job: sd.Job) -> None:
    """The no-op handler (async: no thread hop per job, as in ``drain.py``)."""


def _worker_process(url: str, name: str, partitions: int, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    queue = sd.Queue(name, url=url, partitions=partitions)
    worker = sd.Worker(queue, concurrency=64, group="bench")
    worker.handler("t")(_noop)
    worker.run(until_idle=True)
    results.put(worker.counts["handled"])


def end_to_end_rate(url: str, name: str, partitions: int, jobs: int, workers: int) -> float:
    """Jobs/s from due to acknowledged with ``workers`` processes (embedded dispatchers);
    the jobs were enqueued beforehand, already due."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_worker_process, args=(url, name, partitions, results))
                 for _ in range(workers)]
    started = time.perf_counter()
    for process in processes:
        process.start()
    handled = sum(results.get(timeout=600) for _ in processes)
    elapsed = time.perf_counter() - started
    for process in processes:
        process.join(30)
    if handled < jobs:
        raise RuntimeError(f"only {handled} of {jobs} jobs were handled")
    return jobs / elapsed


def memory_per_job(target: RedisServer | LocalCluster, url: str, partitions: int,
                   jobs: int) -> float:
    """used_memory growth per delayed job (body ``{"order_id": n}``, generated 16-char ids)."""
    before = used_memory(target)
    enqueue_rate(url, f"mem{uuid.uuid4().hex[:6]}", partitions, jobs, 86400)
    return (used_memory(target) - before) / jobs


def measure(label: str, target: RedisServer | LocalCluster, url: str, partitions: int,
            args: argparse.Namespace) -> Figures:
    """Every figure for one target; flushes it between steps."""
    def flush() -> None:
        for node in _primaries(target):
            with node.client() as client:
                client.flushall()

    def fresh() -> str:
        return f"b{uuid.uuid4().hex[:8]}"

    jobs = args.jobs
    figures = Figures(label, partitions, raw_ceiling(target), 0, 0, 0, 0, 0, 0, 0)
    flush()
    figures.enqueue_jobs_s, figures.redis_us_enqueue = cpu_per_job(
        target, jobs, lambda: enqueue_rate(url, fresh(), partitions, jobs, 3600))
    flush()
    name = fresh()
    enqueue_rate(url, name, partitions, jobs, 0)
    figures.dispatch_jobs_s, figures.redis_us_dispatch = cpu_per_job(
        target, jobs, lambda: dispatch_rate(url, name, partitions, jobs))
    flush()
    name = fresh()
    enqueue_rate(url, name, partitions, jobs // 2, 0)
    figures.end_to_end_jobs_s, figures.redis_us_deliver = cpu_per_job(
        target, jobs // 2, lambda: end_to_end_rate(url, name, partitions, jobs // 2,
                                                   args.workers))
    flush()
    figures.bytes_per_delayed_job = memory_per_job(target, url, partitions, args.memory_jobs)
    flush()
    print(json.dumps(asdict(figures)), flush=True)
    return figures


def table(rows: list[Figures]) -> str:
    """The figures as a Markdown table."""
    lines = ["| target | P | raw SET ops/s | enqueue jobs/s | dispatch jobs/s | end-to-end jobs/s "
             "| bytes/delayed job | MB per 1M delayed | Redis CPU µs/job: enqueue, dispatch, "
             "deliver (incl. dispatch) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for f in rows:
        per_million_mb = f.bytes_per_delayed_job * 1e6 / 2**20
        lines.append(f"| {f.target} | {f.partitions} | {f.raw_set_ops:,.0f} | "
                     f"{f.enqueue_jobs_s:,.0f} | {f.dispatch_jobs_s:,.0f} | "
                     f"{f.end_to_end_jobs_s:,.0f} | {f.bytes_per_delayed_job:,.0f} | "
                     f"{per_million_mb:,.0f} | {f.redis_us_enqueue:.1f}, "
                     f"{f.redis_us_dispatch:.1f}, {f.redis_us_deliver:.1f} |")
    return "\n".join(lines)


def measure_all(args: argparse.Namespace) -> list[Figures]:
    """One node with P=1 and P=``args.partitions``, then a 3-primary cluster."""
    rows = []
    with RedisServer() as single:
        rows.append(measure("1 node", single, single.url, 1, args))
        rows.append(measure("1 node", single, single.url, args.partitions, args))
    with LocalCluster(primaries=3) as cluster:
        rows.append(measure("3-primary cluster", cluster, cluster.url, args.partitions, args))
    return rows


def run(jobs: int = 50_000, workers: int = 2, memory_jobs: int = 200_000,
        partitions: int = 8) -> Section:
    """The comparison as a report section for ``run_all.py`` (``docs/benchmarks.md``)."""
    args = argparse.Namespace(jobs=jobs, workers=workers, memory_jobs=memory_jobs,
                              partitions=partitions)
    rows = measure_all(args)
    by_target = {(f.target, f.partitions): f for f in rows}
    single, cluster = by_target[("1 node", partitions)], by_target[("3-primary cluster",
                                                                     partitions)]
    return Section(
        f"Scale-out: 1 node against a 3-primary Redis Cluster, P={partitions}",
        ["target", "P", "raw ceiling: redis-benchmark SET -P 16, ops/s", "enqueue_many jobs/s",
         "dispatch jobs/s (1 dispatcher)", f"end-to-end jobs/s ({workers} worker processes)",
         "B per delayed job", "Redis CPU µs per job: enqueue, dispatch, deliver"],
        [[f.target, str(f.partitions), f"{f.raw_set_ops:,.0f}", f"{f.enqueue_jobs_s:,.0f}",
          f"{f.dispatch_jobs_s:,.0f}", f"{f.end_to_end_jobs_s:,.0f}",
          f"{f.bytes_per_delayed_job:,.0f}",
          f"{f.redis_us_enqueue:.1f}, {f.redis_us_dispatch:.1f}, {f.redis_us_deliver:.1f}"]
         for f in rows],
        notes=[f"`benchmarks/e2e/cluster_bench.py`: {jobs:,} jobs for enqueue and dispatch, "
               f"{jobs // 2:,} end to end (async no-op handler, embedded dispatchers; timed from "
               "starting the worker processes, so their start-up counts), memory "
               f"over {memory_jobs:,} delayed jobs (body `{{\"n\": i}}`). **All Redis nodes, "
               f"the producer and the workers share this machine's "
               f"{multiprocessing.cpu_count()} cores**, so the cluster cannot show its gain "
               "here, only its cost: Redis CPU per job is the figure that carries over to "
               f"real hardware (cluster / 1 node at P={partitions}: dispatch "
               f"{cluster.redis_us_dispatch / single.redis_us_dispatch:.2f}x, delivery "
               f"{cluster.redis_us_deliver / single.redis_us_deliver:.2f}x). The capacity "
               "model for real hardware (jobs/s per node, memory per million delayed jobs, "
               "nodes for a given load) is in [Scale-out](scale-out.md#capacity-model)."],
        figures={"cluster_dispatch": cluster.dispatch_jobs_s,
                 "cluster_end_to_end": cluster.end_to_end_jobs_s})


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-jobs", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args()
    rows = measure_all(args)
    print(table(rows))
    print(f"\n{args.jobs} jobs for enqueue/dispatch, {args.jobs // 2} end to end with "
          f"{args.workers} worker processes; memory over {args.memory_jobs} delayed jobs; "
          f"{multiprocessing.cpu_count()} CPU cores shared by every process; redis-py "
          f"{redis.__version__}.")


if __name__ == "__main__":
    main()
