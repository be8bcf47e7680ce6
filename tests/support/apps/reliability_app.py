"""Worker processes for the reliability and fault tests, and the harness that drives them.

Run ``python -m tests.support.apps.reliability_app URL QUEUE OUT_DIR [options]`` (see
``parse_args``):
it builds an ``sd.Worker`` with the handlers below and calls ``worker.run()``, so SIGTERM,
SIGINT and SIGKILL reach the real worker. Every handler appends JSON lines to
``OUT_DIR/<pid>.jsonl`` (flushed before it goes on, so a line written means it happened):
``{"ev": "start"|"done"|"cancelled", "id", "attempt", "pid", "t"}`` where ``t`` is epoch seconds
of this host (the tests, workers and redis-server share one machine and one clock).

Topics: ``slow`` (async sleep ``body["seconds"]``, capped by ``--sleep-cap``), ``sync_slow`` (the
same in a thread), ``flaky`` (fails until attempt ``body["succeed_on"]``), ``poison`` (always
raises), ``crash`` (``os._exit`` mid-handler), ``typed`` (``body=Order``), ``retry`` (raises
``sd.Retry(delay=body["delay"])`` on its first attempt), ``drop`` (raises ``sd.Drop``), ``hang``
(never returns; ``handler_timeout`` must cancel it), ``fast`` (records ``done`` only).

The test side (``WorkerProcess``, ``read_events``) lives here too, next to the record format.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

import streamdelay as sd

ROOT = Path(__file__).resolve().parents[3]
TOPICS = ("slow", "sync_slow", "flaky", "poison", "crash", "typed", "retry", "drop", "hang",
          "fast")


class Order(msgspec.Struct):
    """The body type of topic ``typed``."""

    order_id: int
    amount: float


class Recorder:
    """Appends one JSON line per event to this process's own file, flushed at once."""

    def __init__(self, out_dir: str) -> None:
        self.out = (Path(out_dir) / f"{os.getpid()}.jsonl").open("a", buffering=1)

    def __call__(self, event: str, job: sd.Job | None) -> None:
        """Record ``event`` for ``job`` (``start``, ``done``, ``cancelled``; ``ready``: None)."""
        line = {"ev": event, "id": job.id if job else "", "attempt": job.attempt if job else 0,
                "pid": os.getpid(), "t": time.time()}
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line of a worker process."""
    parser = argparse.ArgumentParser(prog="reliability_app")
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("out_dir")
    parser.add_argument("--consumer", default=None)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--ttr", type=float, default=60.0)
    parser.add_argument("--block", type=float, default=1.0)
    parser.add_argument("--grace", type=float, default=30.0)
    parser.add_argument("--handler-timeout", type=float, default=300.0)
    parser.add_argument("--reclaim", type=float, default=1.0)
    parser.add_argument("--sleep-cap", type=float, default=None)
    parser.add_argument("--until-idle", action="store_true")
    parser.add_argument("--no-dispatch", action="store_true")
    return parser.parse_args(argv)


class ReportingWorker(sd.Worker):
    """A worker that records ``ready`` once its group is registered (its readers start next)."""

    record: Recorder

    async def register(self) -> None:
        """Register as usual, then record ``ready``."""
        await super().register()
        self.record("ready", None)


def build_worker(args: argparse.Namespace) -> sd.Worker:  # noqa: C901 - one short def per topic
    """The worker of one process, with every test topic's handler registered."""
    queue = sd.Queue(args.queue, url=args.url, ttr=args.ttr)
    worker = ReportingWorker(queue, consumer=args.consumer, concurrency=args.concurrency,
                       block=args.block, shutdown_grace=args.grace,
                       handler_timeout=args.handler_timeout, reclaim_interval=args.reclaim,
                       dispatch=not args.no_dispatch)
    record = worker.record = Recorder(args.out_dir)
    cap = args.sleep_cap

    def seconds(job: sd.Job) -> float:
        wanted = float(job.body["seconds"])
        return wanted if cap is None else min(wanted, cap)

    @worker.handler("slow")
    async def slow(job: sd.Job) -> None:
        record("start", job)
        await asyncio.sleep(seconds(job))
        record("done", job)

    @worker.handler("sync_slow")
    def sync_slow(job: sd.Job) -> None:
        record("start", job)
        time.sleep(seconds(job))
        record("done", job)

    @worker.handler("flaky")
    def flaky(job: sd.Job) -> None:
        record("start", job)
        if job.attempt < int(job.body["succeed_on"]):
            raise ConnectionRefusedError(f"flaky upstream refused attempt {job.attempt}")
        record("done", job)

    @worker.handler("poison")
    def poison(job: sd.Job) -> None:
        record("start", job)
        raise ValueError(f"poison pill {job.id} cannot be handled")

    @worker.handler("crash")
    def crash(job: sd.Job) -> None:
        record("start", job)
        os._exit(3)

    @worker.handler("typed", body=Order)
    def typed(job: sd.Job) -> None:
        record("start", job)
        record("done", job)

    @worker.handler("retry")
    def retry(job: sd.Job) -> None:
        record("start", job)
        if job.attempt == 1:
            raise sd.Retry(delay=float(job.body["delay"]), reason="not yet")
        record("done", job)

    @worker.handler("drop")
    def drop(job: sd.Job) -> None:
        record("start", job)
        raise sd.Drop()

    @worker.handler("hang")
    async def hang(job: sd.Job) -> None:
        record("start", job)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            record("cancelled", job)
            raise

    @worker.handler("fast")
    async def fast(job: sd.Job) -> None:
        record("done", job)

    return worker


def main(argv: list[str]) -> None:
    """Run one worker process until it is stopped (or idle, with ``--until-idle``)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(name)s %(message)s")
    args = parse_args(argv)
    build_worker(args).run(until_idle=args.until_idle)


# --- the test side -------------------------------------------------------------------------

@dataclass(frozen=True)
class Event:
    """One recorded handler event."""

    ev: str
    id: str
    attempt: int
    pid: int
    t: float


def read_events(out_dir: Path) -> list[Event]:
    """Every event recorded so far by every worker process, in time order."""
    events: list[Event] = []
    for path in out_dir.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if line.endswith("}"):  # a line cut by SIGKILL mid-write is not an event
                events.append(Event(**json.loads(line)))
    return sorted(events, key=lambda e: e.t)


def count(events: list[Event], ev: str, pid: int | None = None) -> Counter[str]:
    """How many ``ev`` events each job id has (optionally in one process only)."""
    return Counter(e.id for e in events if e.ev == ev and (pid is None or e.pid == pid))


class WorkerProcess:
    """A worker subprocess of this app; its stderr goes to ``OUT_DIR/<consumer>.log``."""

    def __init__(self, url: str, queue: str, out_dir: Path, consumer: str, *options: str) -> None:
        self.url, self.queue, self.consumer, self.out_dir = url, queue, consumer, out_dir
        self.log_path = out_dir / f"{consumer}.log"
        args = [sys.executable, "-m", "tests.support.apps.reliability_app", url, queue,
                str(out_dir), "--consumer", consumer, *options]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=log)

    @property
    def pid(self) -> int:
        """The process id."""
        return self.process.pid

    def log(self) -> str:
        """What the process logged so far."""
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the worker has registered its group and starts reading its topics."""
        deadline = time.monotonic() + timeout
        while not any(e.ev == "ready" and e.pid == self.pid for e in read_events(self.out_dir)):
            if self.process.poll() is not None:
                raise AssertionError(f"worker {self.consumer} exited: {self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.consumer} never got ready: {self.log()}")
            time.sleep(0.05)

    def signal(self, sig: signal.Signals) -> float:
        """Send ``sig``; returns the time it was sent (epoch seconds)."""
        sent = time.time()
        self.process.send_signal(sig)
        return sent

    def wait(self, timeout: float) -> int:
        """Wait for the process to exit; its exit code."""
        return self.process.wait(timeout)

    def stop(self) -> None:
        """SIGKILL the process if it still runs (test clean-up)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


class Workers:
    """Starts worker processes of one queue and kills any left running at the end of a test."""

    def __init__(self, url: str, queue: str, out_dir: Path) -> None:
        self.url, self.queue, self.out_dir = url, queue, out_dir
        self.started: list[WorkerProcess] = []

    def start(self, consumer: str, *options: str) -> WorkerProcess:
        """Start one worker process named ``consumer`` with command-line ``options``."""
        worker = WorkerProcess(self.url, self.queue, self.out_dir, consumer, *options)
        self.started.append(worker)
        return worker

    def events(self) -> list[Event]:
        """Every event recorded so far."""
        return read_events(self.out_dir)

    def stop_all(self) -> None:
        """SIGKILL every process still running."""
        for worker in self.started:
            worker.stop()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str,
             interval: float = 0.05) -> Any:
    """Poll until ``predicate()`` is truthy; fail the test naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


if __name__ == "__main__":
    main(sys.argv[1:])
