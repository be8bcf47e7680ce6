"""The process executor (docs/worker.md#executors): what a job costs through a child process
against a thread, and how CPU-bound handlers scale over processes, next to the raw ceilings of
the same moment.

Worker processes run ``benchmarks.e2e.process_app`` through the real CLI, each on its own queue,
all started once and idle between runs: the thread executor (``def`` handlers, concurrency 64),
``--processes`` one per core, and for the CPU rows ``--processes 1`` and ``2``. Drain: N jobs
due at one instant, seconds from then until the last ack (``wait_drained``, polled sparingly: a
poll every 2 ms took 30-60 ms of CPU a second on the 2-core host from the workers measured, which
the raw rows never paid); the sides run in
turns (the order alternated) and each figure is the median of its runs, since this machine's
speed swings within seconds. CPU: each job spins about 10 ms of pure Python
(``process_app.spin``, its loop count calibrated here first). The raw ceilings: the same spins
in plain processes with no queue (``ProcessPoolExecutor``, spawned, warmed), one process
against two, run in the same turns as the workers, which says how much of the second core the
machine gave at those moments; and the
round trips per second of a msgspec frame over a ``multiprocessing`` pipe to a spawned echo
child, the transport a job and its answer take.

Run: ``.venv/bin/python benchmarks/e2e/process_executor.py [--jobs 5000] [--cpu-jobs 300]``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import (
    ROOT,
    Section,
    Workers,
    keys_of,
    measure_clock_offset,
    redis_server,
    server_now_ms,
    verdict,
    wait_drained,
)
from benchmarks.e2e.process_app import CPU, NOOP, spin
from streamdelay.consume.processes import wire

TARGET = 1.7  # CPU-bound jobs: 2 processes at least 1.7 times as fast as 1 (on 2 cores)
CPU_MS = 10.0


class AppWorkers(Workers):
    """One ``streamdelay worker benchmarks.e2e.process_app:worker`` process, with ``extra``
    arguments (``--processes N``)."""

    def __init__(self, url: str, queue: str, loops: int, app: str, *extra: str) -> None:
        self.url, self.queue, self.n, self.dispatch = url, queue, 1, True
        self.logdir = Path(tempfile.mkdtemp(prefix="sd-bench-proc-"))
        env = dict(os.environ, BENCH_QUEUE=queue, BENCH_CPU_LOOPS=str(loops),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "streamdelay", "worker", f"benchmarks.e2e.process_app:{app}",
                "--url", url, "--log-level", "warning", *extra]
        self.processes = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                           stderr=(self.logdir / "worker0.log").open("wb"))]


def calibrate(ms: float = CPU_MS) -> int:
    """The ``spin`` loop count of about ``ms`` milliseconds here (the fastest of 7 tries: the
    machine's own speed, not a neighbour's burst)."""
    probe = 200_000
    best = min(_timed(spin, probe) for _ in range(7))
    return max(1000, int(probe * ms / 1000 / best))


def _timed(fn: object, *args: object) -> float:
    began = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - began


def _spin_many(loops: int, count: int) -> None:
    for _ in range(count):
        spin(loops)


def plain_pool(processes: int) -> ProcessPoolExecutor:
    """``processes`` plain spawned processes, started and warmed (imports done)."""
    pool = ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn"))
    list(pool.map(spin, [1000] * processes))
    return pool


def raw_cpu(pool: ProcessPoolExecutor, processes: int, loops: int, jobs: int) -> float:
    """Seconds for ``jobs`` spins split over the ``processes`` of ``pool``: no queue."""
    shares = [jobs // processes + (i < jobs % processes) for i in range(processes)]
    began = time.perf_counter()
    list(pool.map(_spin_many, [loops] * processes, shares))
    return time.perf_counter() - began


def _echo(conn: Connection) -> None:
    while True:
        try:
            conn.send_bytes(conn.recv_bytes())
        except EOFError:
            return


def raw_pipe(rounds: int = 20_000) -> float:
    """Round trips per second of a job-sized msgspec frame to a spawned echo child."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    child = context.Process(target=_echo, args=(theirs,), daemon=True)
    child.start()
    theirs.close()
    frame = wire.encode(wire.RunJob(NOOP, "job-000001", wire.encode_body({"order_id": 42}),
                                    0, 0, 1, 10, 60.0, {}, "1-0", 0, 0))
    try:
        for _ in range(100):  # warm
            ours.send_bytes(frame)
            ours.recv_bytes()
        began = time.perf_counter()
        for _ in range(rounds):
            ours.send_bytes(frame)
            wire.to_child(ours.recv_bytes())
        return rounds / (time.perf_counter() - began)
    finally:
        ours.close()
        child.join(5)


def drain_once(client: redis.Redis, queue: sd.Queue, workers: Workers, topic: str, jobs: int,
               offset_ms: float) -> float:
    """Seconds from the instant ``jobs`` jobs of ``topic`` were due to the last ack."""
    due_at_ms = server_now_ms(client) + (1.0 + jobs / 2_000) * 1000  # slow on a loaded host
    for start in range(0, jobs, 5_000):
        queue.enqueue_many([sd.JobSpec(topic, {"n": i}, at=due_at_ms / 1000,
                                       id=f"{queue.name}-{time.time_ns()}-{i}")
                            for i in range(start, min(jobs, start + 5_000))])
    if server_now_ms(client) >= due_at_ms:
        raise RuntimeError("enqueueing took longer than the lead")
    # sparing: the poll's own CPU would be taken from the workers (the raw rows pay none)
    elapsed, _ = wait_drained(client, keys_of(queue.name).jobs, due_at_ms, offset_ms, workers,
                              sparing=True)
    return elapsed


def in_turns(sides: dict[str, Callable[[int], float]], jobs: int, turns: int
             ) -> dict[str, list[float]]:
    """Seconds of each side for ``jobs`` jobs, ``turns`` times, the order of the sides rotated
    each turn (each side warmed first with a tenth, not counted)."""
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for name in names:
        sides[name](max(10, jobs // 10))
    for turn in range(turns):
        for name in names[turn % len(names):] + names[:turn % len(names)]:
            times[name].append(sides[name](jobs))
    return times


def run(jobs: int = 5_000, cpu_jobs: int = 300, turns: int = 3) -> Section:
    """The process executor's table of one run."""
    cores = os.cpu_count() or 1
    loops = calibrate()
    pipe = raw_pipe()
    with redis_server() as server, plain_pool(1) as one, plain_pool(2) as two:
        client = server.client()
        url = server.url
        settings = {"thread": ("noop_worker",),
                    f"noop{cores}": ("noop_worker", "--processes", str(cores)),
                    "cputhread": ("cpu_worker",), "process1": ("cpu_worker", "--processes", "1"),
                    "process2": ("cpu_worker", "--processes", "2")}
        started = {name: AppWorkers(url, f"pe{name}", loops, *extra)
                   for name, extra in settings.items()}
        queues = {name: sd.Queue(f"pe{name}", url=url) for name in settings}
        try:
            for workers in started.values():  # every one reads: the server counts them all
                workers.n = len(started)
                workers.wait_ready(client, timeout=120)
            offset_ms, _ = measure_clock_offset(client)

            def draining(name: str, topic: str) -> Callable[[int], float]:
                return partial(drain_once, client, queues[name], started[name], topic,
                               offset_ms=offset_ms)

            noop = in_turns({n: draining(n, NOOP) for n in ("thread", f"noop{cores}")}, jobs,
                            turns)
            cpu = in_turns({**{n: draining(n, CPU) for n in ("cputhread", "process1", "process2")},
                            "raw1": partial(raw_cpu, one, 1, loops),
                            "raw2": partial(raw_cpu, two, 2, loops)}, cpu_jobs, turns)
        finally:
            for workers in started.values():
                workers.stop()
            for queue in queues.values():
                queue.close()
    return _section(jobs, cpu_jobs, cores, loops, noop, cpu, pipe)


def _section(jobs: int, cpu_jobs: int, cores: int, loops: int, noop: dict[str, list[float]],
             cpu: dict[str, list[float]], pipe: float) -> Section:
    med = {f"{kind}_{name}": statistics.median(times)
           for kind, sides in (("noop", noop), ("cpu", cpu)) for name, times in sides.items()}
    procs = f"noop{cores}"
    noop_thread, noop_proc = jobs / statistics.median(noop["thread"]), jobs / statistics.median(
        noop[procs])
    cpu_rates = {name: cpu_jobs / statistics.median(times) for name, times in cpu.items()}
    speedup = cpu_rates["process2"] / cpu_rates["process1"]
    raw_speedup = cpu_rates["raw2"] / cpu_rates["raw1"]
    rows = [
        [f"drain {jobs:,} no-op jobs", "thread executor (def, concurrency 64)",
         f"{noop_thread:,.0f}", _runs(noop["thread"])],
        [f"drain {jobs:,} no-op jobs", f"process executor, {cores} processes",
         f"{noop_proc:,.0f}", _runs(noop[procs])],
        [f"{cpu_jobs} CPU jobs of ~{CPU_MS:g} ms", "thread executor (def, concurrency 64)",
         f"{cpu_rates['cputhread']:,.0f}", _runs(cpu["cputhread"])],
        [f"{cpu_jobs} CPU jobs of ~{CPU_MS:g} ms", "process executor, 1 process",
         f"{cpu_rates['process1']:,.0f}", _runs(cpu["process1"])],
        [f"{cpu_jobs} CPU jobs of ~{CPU_MS:g} ms", "process executor, 2 processes",
         f"{cpu_rates['process2']:,.0f}", _runs(cpu["process2"])],
        [f"raw: {cpu_jobs} spins, no queue", "1 plain process", f"{cpu_rates['raw1']:,.0f}",
         _runs(cpu["raw1"])],
        [f"raw: {cpu_jobs} spins, no queue", "2 plain processes", f"{cpu_rates['raw2']:,.0f}",
         _runs(cpu["raw2"])],
        ["raw: frame round trips over a pipe", "1 spawned echo process", f"{pipe:,.0f}", "-"],
    ]
    checks = [
        verdict(f"CPU-bound jobs, 2 processes against 1: at least {TARGET}x", speedup >= TARGET,
                f"{speedup:.2f}x; plain processes with no queue: {raw_speedup:.2f}x at the "
                f"same moment", key="listed-target:process-cpu"),
    ]
    notes = [f"Jobs/s from the median of {len(noop['thread'])} runs a side, the sides in turns "
             f"(seconds of each run listed). A CPU job spins {loops:,} loops "
             f"(~{CPU_MS:g} ms here, calibrated at the start). A no-op job costs the process "
             f"executor {1e6 / noop_proc - 1e6 / noop_thread:,.0f} µs more than the thread "
             f"executor per job of drain; the raw pipe round trip alone is "
             f"{1e6 / pipe:,.0f} µs. The kernel's autogroup scheduling "
             f"(`/proc/sys/kernel/sched_autogroup_enabled`) was {autogroup()} in this run: at 1 "
             f"every session with work to run gets an equal share of the cores however many "
             f"processes it runs, so on a shared machine the second process may gain no core "
             f"(the raw row says what it gained)."]
    figures = {"process_noop_thread": noop_thread, "process_noop_processes": noop_proc,
               "process_cpu_1": cpu_rates["process1"], "process_cpu_2": cpu_rates["process2"],
               "process_cpu_thread": cpu_rates["cputhread"], "process_cpu_speedup": speedup,
               "process_cpu_raw_speedup": raw_speedup, "process_pipe_rtt": pipe,
               "process_autogroup": float(autogroup()) if autogroup().isdigit() else math.nan,
               **{f"process_median_{k}": v for k, v in med.items()}}
    return Section("Process executor: no-op drain and CPU-bound jobs against threads, and the "
                   "raw ceilings of the same run {#process-executor}",
                   ["workload", "executor", "jobs/s", "seconds per run"], rows, checks, notes,
                   figures=figures)


def autogroup() -> str:
    """``/proc/sys/kernel/sched_autogroup_enabled`` ("1": the kernel shares the cores by
    session, not by process), or "unknown" off Linux."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return "unknown"


def _runs(times: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in times)


def main() -> None:
    """Run the section and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5_000)
    parser.add_argument("--cpu-jobs", type=int, default=300)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    section = run(args.jobs, args.cpu_jobs, args.turns)
    section.print()
    print()
    print(section.markdown())


if __name__ == "__main__":
    main()
