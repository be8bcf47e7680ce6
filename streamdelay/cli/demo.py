"""``streamdelay demo`` (docs/getting-started.md): the main job, end to end, on a real Redis.

Uses the Redis at the given URL when it answers, else a private server on a free port
(cli/private_server.py: the system's redis-server, else the embedded Valkey). Then: a worker
with its embedded dispatcher in this process, a few hundred jobs due 0.5 s to 10 s from now, one
job that fails twice and then succeeds, one that ends dead, one cancelled before its time, a live
view of counts and lateness, and a closing summary. Lateness = handler start minus due time, both
on the server clock (the local clock's offset to Redis ``TIME`` is measured once, at the smallest
round trip).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
import signal
import sys
import time
from dataclasses import dataclass, field
from secrets import token_hex
from typing import TextIO

import redis

from ..base.errors import ValidationError
from ..base.models import Job, JobSpec
from ..client.queue import AsyncQueue
from ..consume.worker import Worker
from ..io.clients import sync_client
from ..io.steps import run_step_sync
from ..protocol.keys import partition_keys
from ..protocol.plan import Command
from .demo_dashboard import DASHBOARD_HINT, serve_dashboard
from .private_server import demo_server

TOPICS = ("demo.work", "demo.flaky", "demo.doomed")
FLAKY_FAILURES = 2
DOOMED_ATTEMPTS = 3
RETRY_BACKOFF = [0.5]


@dataclass(frozen=True)
class DemoSettings:
    """How big the demo is; the defaults are the real demo, tests run a smaller one."""

    jobs: int = 300
    min_delay: float = 0.5
    max_delay: float = 10.0
    concurrency: int = 32
    deadline: float = 50.0

    def __post_init__(self) -> None:
        if not 1 <= self.jobs <= 100_000:
            raise ValidationError("jobs: must be in [1, 100000]", field="jobs")
        if not 0 <= self.min_delay < self.max_delay <= 30:
            raise ValidationError("max_delay: must be above min_delay and at most 30s",
                                  field="max_delay")


def server_clock_offset_ms(url: str, samples: int = 7) -> tuple[float, float]:
    """(server clock minus local clock in ms, half the best round trip in ms)."""
    client = sync_client(url, 5.0)
    best = (0.0, math.inf)
    try:
        for _ in range(samples):
            before = time.time()
            seconds, micros = run_step_sync(client, Command(("TIME",)))
            after = time.time()
            half_trip = (after - before) * 500
            if half_trip < best[1]:
                best = (seconds * 1000 + micros / 1000 - (before + after) * 500, half_trip)
    finally:
        client.close()
    return best


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@dataclass
class Tally:
    """What the handlers saw."""

    offset_ms: float
    lateness_ms: list[float] = field(default_factory=list)
    work_ids: set[str] = field(default_factory=set)
    flaky_attempts: list[int] = field(default_factory=list)
    doomed_attempts: list[int] = field(default_factory=list)

    def started(self, job: Job) -> None:
        """Record the lateness of one handler start."""
        self.lateness_ms.append(time.time() * 1000 + self.offset_ms - job.due)


class LiveView:
    """One refreshing status line on a terminal (a line per second otherwise) plus events."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.live = out.isatty()
        self.last_line = 0.0

    def status(self, text: str, *, final: bool = False) -> None:
        """Show the status line (throttled when not on a terminal)."""
        if self.live:
            self.out.write("\r\x1b[K  " + text + ("\n" if final else ""))
        elif final or time.monotonic() - self.last_line >= 1.0:
            self.out.write("  " + text + "\n")
            self.last_line = time.monotonic()
        self.out.flush()

    def event(self, text: str) -> None:
        """Print an event line above the status line."""
        self.out.write(("\r\x1b[K" if self.live else "") + "  > " + text + "\n")
        self.out.flush()


def build_worker(queue: AsyncQueue, tally: Tally, view: LiveView, concurrency: int) -> Worker:
    """The demo's worker: one group, three topics, the dispatcher embedded."""
    worker = Worker(queue, group="demo", concurrency=concurrency, shutdown_grace=5)

    @worker.handler("demo.work")
    async def work(job: Job) -> None:
        tally.started(job)
        tally.work_ids.add(job.id)
        await asyncio.sleep(random.uniform(0.0, 0.02))  # a little work, so "reserved" shows

    @worker.handler("demo.flaky")
    async def flaky(job: Job) -> None:
        tally.started(job)
        tally.flaky_attempts.append(job.attempt)
        if job.attempt <= FLAKY_FAILURES:
            view.event(f"{job.id}: attempt {job.attempt} fails on purpose -> retried after "
                       f"backoff")
            raise RuntimeError(f"flaky failure on attempt {job.attempt}")
        view.event(f"{job.id}: attempt {job.attempt} succeeds")

    @worker.handler("demo.doomed")
    async def doomed(job: Job) -> None:
        tally.started(job)
        tally.doomed_attempts.append(job.attempt)
        last = " (its last: -> dead letter)" if job.attempt >= job.max_attempts else ""
        view.event(f"{job.id}: attempt {job.attempt} of {job.max_attempts} fails{last}")
        raise RuntimeError("this job always fails")

    return worker


def demo_jobs(settings: DemoSettings) -> list[JobSpec]:
    """The work jobs, spread uniformly over the delay range, and the two special ones."""
    span = settings.max_delay - settings.min_delay
    specs = [JobSpec("demo.work", {"n": n}, id=f"work-{n:05d}",
                     delay=round(random.uniform(settings.min_delay, settings.max_delay), 3))
             for n in range(settings.jobs)]
    specs.append(JobSpec("demo.flaky", {"note": "fails twice"}, id="flaky-1",
                         delay=settings.min_delay + span * 0.2, backoff=RETRY_BACKOFF))
    specs.append(JobSpec("demo.doomed", {"note": "always fails"}, id="doomed-1",
                         delay=settings.min_delay + span * 0.3, max_attempts=DOOMED_ATTEMPTS,
                         backoff=RETRY_BACKOFF))
    return specs


def finished(worker: Worker, settings: DemoSettings) -> bool:
    """Every work job and the flaky one handled, the doomed one dead."""
    return worker.counts["handled"] >= settings.jobs + 1 and worker.counts["dead"] >= 1


async def watch(queue: AsyncQueue, worker: Worker, tally: Tally, view: LiveView,
                settings: DemoSettings, started: float) -> bool:
    """Refresh the live view until the demo is done (True) or its deadline passes (False)."""
    expected = settings.jobs + 1
    while True:
        await asyncio.sleep(0.25)
        total = (await queue.stats()).total
        lateness = list(tally.lateness_ms)
        done = finished(worker, settings)
        view.status(f"[{time.monotonic() - started:5.1f}s] delayed {total.delayed:4d}  "
                    f"ready {total.ready:3d}  reserved {total.reserved:3d}  "
                    f"handled {worker.counts['handled']:4d}/{expected}  "
                    f"retried {worker.counts['retried']}  dead {worker.counts['dead']}  "
                    f"lateness p50 {percentile(lateness, 0.5):.1f}ms "
                    f"p99 {percentile(lateness, 0.99):.1f}ms", final=done)
        if done:
            return True
        if time.monotonic() - started > settings.deadline:
            view.event(f"deadline of {settings.deadline:g}s passed; stopping")
            return False


async def play(url: str, name: str, settings: DemoSettings, out: TextIO) -> int:
    """Run the demo on queue ``name`` at ``url``; returns the exit code."""
    offset, error_ms = server_clock_offset_ms(url)
    queue = AsyncQueue(name, url=url)
    tally, view = Tally(offset), LiveView(out)
    worker = build_worker(queue, tally, view, settings.concurrency)
    print(f"  queue   {queue.name}: one worker process (group demo, concurrency "
          f"{settings.concurrency}) with its dispatcher embedded", file=out)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stop)
    serving = asyncio.create_task(worker.serve())
    try:
        await asyncio.sleep(0.2)
        specs = demo_jobs(settings)
        await queue.enqueue_many(specs)
        await queue.enqueue("demo.work", {"n": -1}, id="cancelled-1", delay=settings.min_delay)
        cancelled = await queue.cancel("cancelled-1")
        print(f"  jobs    enqueued {settings.jobs} demo.work jobs due in "
              f"{settings.min_delay:g}s..{settings.max_delay:g}s in one round trip, flaky-1 "
              f"(fails twice, then succeeds), doomed-1 (always fails, {DOOMED_ATTEMPTS} "
              f"attempts), and cancelled-1 (cancelled at once: {cancelled})\n", file=out)
        started = time.monotonic()
        complete = await watch(queue, worker, tally, view, settings, started)
        took = time.monotonic() - started
    finally:
        worker.stop()
        await serving
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    doomed = await queue.get("doomed-1")
    await queue.close()
    early = [x for x in tally.lateness_ms if x < -(error_ms + 1.0)]
    ok = (complete and not early and "cancelled-1" not in tally.work_ids
          and doomed is not None and doomed.state == "dead")
    print(summary(worker, tally, settings, doomed.error if doomed else None, len(early), took),
          file=out)
    return 0 if ok else 1


def failures(attempts: list[int]) -> int:
    """How many of these attempts were followed by another one."""
    return max(0, len(attempts) - 1)


def summary(worker: Worker, tally: Tally, settings: DemoSettings, dead_error: str | None,
            early: int, took: float) -> str:
    """The closing summary: handled, retried, dead, lateness percentiles."""
    lateness = tally.lateness_ms
    flaky = tally.flaky_attempts[-1] if tally.flaky_attempts else 0
    reason = (dead_error or "?").splitlines()[0]
    return "\n".join([
        "",
        "summary",
        f"  handled   {worker.counts['handled']} jobs ({len(tally.work_ids)} demo.work of "
        f"{settings.jobs}; flaky-1 succeeded on attempt {flaky}; cancelled-1 never ran)",
        f"  retried   {worker.counts['retried']} (flaky-1 {failures(tally.flaky_attempts)}x, "
        f"doomed-1 {failures(tally.doomed_attempts)}x)",
        f"  dead      {worker.counts['dead']} (doomed-1 after {len(tally.doomed_attempts)} "
        f"attempts: {reason})",
        f"  lateness  p50 {percentile(lateness, 0.5):.1f} ms, p99 "
        f"{percentile(lateness, 0.99):.1f} ms, max {max(lateness, default=0):.1f} ms over "
        f"{len(lateness)} handler starts (server clock); early: {early}",
        f"  took      {took:.1f} s",
    ])


def drop_queue(url: str, name: str) -> None:
    """Delete the demo queue's keys from a Redis that is not ours."""
    client = sync_client(url, 5.0)
    try:
        for keys in partition_keys(name, 1):
            run_step_sync(client, Command((
                "DEL", *keys.script_keys(), keys.meta, keys.fleet, keys.workers, keys.commands,
                *(keys.stream(t) for t in TOPICS), *(keys.dead(t) for t in TOPICS))))
        # the workers' lateness record (docs/dashboard.md#lateness): the minutes of the demo
        reply = run_step_sync(client, Command(("TIME",)))
        seconds = next(iter(reply.values()))[0] if isinstance(reply, dict) else reply[0]
        minute = int(seconds) // 60
        base = partition_keys(name, 1)[0].lateness
        minutes = range(minute - 15, minute + 1)
        # and its history (docs/dashboard.md#totals): the demo's day and the totals
        days = {m // 1440 for m in minutes}
        run_step_sync(client, Command(("DEL", base, *(f"{base}:{m}" for m in minutes),
                                       *(f"{base}:seen:{m}" for m in minutes),
                                       *(f"{base}:day:{d}" for d in days), f"{base}:total")))
    finally:
        client.close()


def run_demo(url: str, settings: DemoSettings, out: TextIO | None = None,
             dashboard_port: int | None = None) -> int:
    """Run the whole demo and return its exit code (0: everything happened as it should);
    with ``dashboard_port``, then serve the demo queue's dashboard until Ctrl-C."""
    stream = out or sys.stdout
    library_log = logging.getLogger("streamdelay")
    library_log.addHandler(logging.StreamHandler(sys.stderr))
    library_log.setLevel(logging.ERROR)
    library_log.propagate = False
    print("streamdelay demo: delayed jobs on Redis Streams, end to end", file=stream)
    name = f"demo-{token_hex(3)}"
    try:
        with demo_server(url, stream) as usable:
            try:
                code = asyncio.run(play(usable, name, settings, stream))
                if dashboard_port is None:
                    print(DASHBOARD_HINT, file=stream)
                else:
                    serve_dashboard(usable, name, dashboard_port, stream)
                return code
            finally:
                if usable == url:  # not our private server: leave nothing behind
                    with contextlib.suppress(redis.RedisError):
                        drop_queue(usable, name)
    except RuntimeError as exc:
        print(f"streamdelay demo: error: {exc}", file=sys.stderr)
        return 1
