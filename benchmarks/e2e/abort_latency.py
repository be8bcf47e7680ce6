"""Abort latency (docs/worker.md#abort, issue 36): seconds from ``q.cancel(id, abort=True)``
returning to the end of the running handler, for each kind of handler.

Two real ``streamdelay worker benchmarks.e2e.abort_app:worker`` processes, each on its own
queue: the thread executor (an ``async def`` handler, cancelled at its ``await``, and a ``def``
handler that calls ``job.check_abort()`` every 10 ms) and the process executor
(``--processes 4``: a ``def`` handler that sleeps without looking; its child gets SIGTERM). Every
handler writes ``time.time()`` when it starts and in its ``finally`` (``abort_app``). The jobs
of a round all run before the first abort; the aborts of a round are ``GAP_S`` apart, so they
fall at every phase of the workers' pause watch, which reads the aborts every ``REFRESH_S``
(0.5 s): the latency's bound. The process executor's rounds hold as many jobs as it has
children (an aborted child is replaced before the next round starts).

Run: ``.venv/bin/python benchmarks/e2e/abort_latency.py [--aborts 40]``.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import ROOT, Section, Workers, ms, redis_server, verdict
from benchmarks.core.stats import percentile
from benchmarks.e2e.abort_app import ASYNC, POLL, SLEEP
from streamdelay.consume.core.constants import REFRESH_S

TARGET_S = 1.0  # issue 36: an abort stops the handler within 1 s (p99)
GAP_S = 0.067  # between two aborts: not a divisor of REFRESH_S, so the phases spread
CHILDREN = 4
WAIT_S = 60.0  # for the jobs of a round to start, and for the aborted ones to end


class AbortWorkers(Workers):
    """One ``streamdelay worker benchmarks.e2e.abort_app:worker`` process, with ``extra``
    arguments (``--processes N``), its handlers marking in ``marks``."""

    def __init__(self, url: str, queue: str, marks: Path, *extra: str) -> None:
        self.url, self.queue, self.n, self.dispatch = url, queue, 1, True
        self.logdir = Path(tempfile.mkdtemp(prefix="sd-bench-abort-"))
        env = dict(os.environ, BENCH_QUEUE=queue, BENCH_ABORT_DIR=str(marks),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "streamdelay", "worker", "benchmarks.e2e.abort_app:worker",
                "--url", url, "--log-level", "warning", *extra]
        self.processes = [subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                           stderr=(self.logdir / "worker0.log").open("wb"))]


def _read(path: Path) -> float | None:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    return float(text) if text else None  # an empty file: being written


def _wait_marks(marks: Path, ids: list[str], what: str, workers: Workers) -> dict[str, float]:
    deadline = time.monotonic() + WAIT_S
    found: dict[str, float] = {}
    while time.monotonic() < deadline:
        for job_id in ids:
            if job_id not in found and (at := _read(marks / f"{job_id}.{what}")) is not None:
                found[job_id] = at
        if len(found) == len(ids):
            return found
        workers.check_alive()
        time.sleep(0.01)
    raise RuntimeError(f"{len(ids) - len(found)} of {len(ids)} handlers did not {what} "
                       f"within {WAIT_S:g} s; logs in {workers.logdir}")


def abort_round(queue: sd.Queue, workers: Workers, marks: Path, topics: list[str],
                tag: str) -> dict[str, list[float]]:
    """One job of each of ``topics`` (in that order) started, then aborted ``GAP_S`` apart:
    the seconds from each cancel's return to its handler's end, by topic."""
    ids = [f"{tag}-{i}-{time.time_ns()}" for i in range(len(topics))]
    for job_id, topic in zip(ids, topics, strict=True):
        queue.enqueue(topic, {}, id=job_id)
    _wait_marks(marks, ids, "start", workers)
    cancelled: dict[str, float] = {}
    for job_id in ids:
        if not queue.cancel(job_id, abort=True):
            raise RuntimeError(f"job {job_id} was not there to cancel")
        cancelled[job_id] = time.time()
        time.sleep(GAP_S)
    ended = _wait_marks(marks, ids, "end", workers)
    latencies: dict[str, list[float]] = {topic: [] for topic in topics}
    for job_id, topic in zip(ids, topics, strict=True):
        latencies[topic].append(ended[job_id] - cancelled[job_id])
    return latencies


def run(aborts: int = 40) -> Section:
    """The abort-latency table of one run: ``aborts`` aborts of each kind of handler."""
    marks = Path(tempfile.mkdtemp(prefix="sd-bench-abort-marks-"))
    latencies: dict[str, list[float]] = {ASYNC: [], POLL: [], SLEEP: []}
    with redis_server() as server:
        client, url = server.client(), server.url
        threads = AbortWorkers(url, "abthread", marks)
        processes = AbortWorkers(url, "abprocess", marks, "--processes", str(CHILDREN))
        queues = {"thread": sd.Queue("abthread", url=url),
                  "process": sd.Queue("abprocess", url=url)}
        try:
            for workers in (threads, processes):
                workers.n = 2  # both read: the server counts them together
                workers.wait_ready(client, timeout=120)
            # the thread executor: every job of the kinds interleaved, all running at once
            for kind, got in abort_round(queues["thread"], threads, marks,
                                         [ASYNC, POLL] * aborts, "t").items():
                latencies[kind] += got
            for n in range(math.ceil(aborts / CHILDREN)):
                count = min(CHILDREN, aborts - n * CHILDREN)
                for kind, got in abort_round(queues["process"], processes, marks,
                                             [SLEEP] * count, f"p{n}").items():
                    latencies[kind] += got
        finally:
            for workers in (threads, processes):
                workers.stop()
            for queue in queues.values():
                queue.close()
    return _section(latencies)


def _section(latencies: dict[str, list[float]]) -> Section:
    kinds = [(ASYNC, "abort_async", "`async def` (cancelled at its await)", "thread executor"),
             (POLL, "abort_poll", "`def` polling `job.check_abort()` every 10 ms",
              "thread executor"),
             (SLEEP, "abort_process", "`def` that never looks (SIGTERM to its child)",
              f"process executor, {CHILDREN} processes")]
    rows, figures, worst = [], {}, 0.0
    for topic, key, handler, executor in kinds:
        got = [s * 1000 for s in latencies[topic]]
        p50, p99, top = percentile(got, 50), percentile(got, 99), max(got, default=math.nan)
        rows.append([handler, executor, str(len(got)), ms(p50), ms(p99), ms(top)])
        figures.update({f"{key}_p50_ms": p50, f"{key}_p99_ms": p99, f"{key}_max_ms": top})
        worst = max(worst, p99) if not math.isnan(p99) else math.nan
    figure = ", ".join(f"{name} p99 {ms(figures[f'{key}_p99_ms'])} ms"
                       for name, key in (("async", "abort_async"), ("def", "abort_poll"),
                                         ("process", "abort_process")))
    checks = [verdict(f"abort latency: the handler ends within {TARGET_S:g} s of the cancel "
                      "(p99, each kind of handler)",
                      None if math.isnan(worst) else worst <= TARGET_S * 1000, figure,
                      key="listed-target:abort-latency")]
    notes = [f"Milliseconds from `q.cancel(id, abort=True)` returning to the handler's end (its "
             f"`finally`, `time.time()` on this machine). The workers read the aborts in their "
             f"pause watch, every {REFRESH_S:g} s: a latency between 0 and about that, plus the "
             f"handler's own way out (a thread's next `check_abort()`, a child's SIGTERM). "
             f"Aborts {GAP_S * 1000:.0f} ms apart, so they fall at every phase of the watch."]
    return Section("Abort latency: from `cancel(id, abort=True)` to the handler's end "
                   "{#abort-latency}",
                   ["handler", "executor", "aborts", "p50 ms", "p99 ms", "max ms"], rows, checks,
                   notes, figures=figures)


def main() -> None:
    """Run the section and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aborts", type=int, default=40)
    args = parser.parse_args()
    section = run(args.aborts)
    section.print()
    print()
    print(section.markdown())


if __name__ == "__main__":
    main()
