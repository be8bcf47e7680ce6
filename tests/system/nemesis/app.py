"""A worker process of the nemesis run (docs/reliability.md#make-nemesis): a real ``sd.Worker``
(with its embedded dispatcher) serving every workload's topic, each handler run recorded in the
run's history (``tests/system/nemesis/history.py``): a ``start`` note when the handler begins
and an ``end`` note (``outcome`` ``ok`` or ``fail``, ``value``) when it is done, with the job's
``attempt`` and the worker's name; the batches' callbacks also write a ``callback`` note.

``python -m tests.system.nemesis.app URL QUEUE OUT NAME [--rogue] [--broken NAME]``; the
partition count comes from ``STREAMDELAY_PARTITIONS`` as for any ``sd.Queue``. ``--rogue``
makes a broken worker, the checker's own test (tests/system/test_nemesis_quick.py): next to
its handlers a thread lists the delayed jobs and runs them at once, before they are due, as a
worker that ignored due times would. ``--broken`` makes a broken build (``BROKEN``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

import streamdelay as sd
from tests.system.nemesis.history import Recorder

TTR = 3.0  # a killed or cut-off worker's jobs come back 3 s after its last heartbeat
KEEP_RESULT = 3600.0  # results are read back after the run settles
# How long an acknowledged job's id stays taken (``keep_done``; ``--keep-done`` of run.py sets
# NEMESIS_KEEP_DONE): without it, an enqueue whose reply was lost in a Redis restart and whose
# retry reaches Redis after the job already ran and was acknowledged creates the job a second
# time (docs/reliability.md#make-nemesis, "A retried enqueue").
KEEP_DONE_ENV = "NEMESIS_KEEP_DONE"
TOPICS = ("plain", "retry", "keyed", "flow", "callback", "result", "prio", "dense")
# each run's work: short, so runs of one job rarely straddle a fault (NEMESIS_WORK_S="lo,hi":
# longer, for a broken build whose runs must straddle its reclaims)
WORK_S_ENV = "NEMESIS_WORK_S"
WORK_S = tuple(float(x) for x in os.environ.get(WORK_S_ENV, "0,0.05").split(","))
# Broken builds (``--broken NAME``), the checker's own test (tests/system/test_nemesis_broken.py):
# one line of one Lua script changed in this process's copy of the scripts, nothing else.
BROKEN = {
    # promoteDue moves what is due within the next ms too: a promotion 1 ms early
    "promote_early": ("promoteDue", "redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, ",
                      "redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now + 1, "),
    # requeueStuck takes every running job of another consumer: a reclaim that ignores ttr
    "reclaim_ignores_ttr": ("requeueStuck", "    if limit < 0 then limit = r.ttr end\n",
                            "    limit = 0\n"),
}


def queue_for(url: str, name: str, partitions: int | None = None,
              retry_for: float | None = 5.0) -> sd.Queue:
    """The queue every nemesis process uses: the same settings on each side (the partition
    count from ``STREAMDELAY_PARTITIONS`` unless given)."""
    return sd.Queue(name, url=url, ttr=TTR, max_attempts=20, backoff=[0.2],
                    keep_result=KEEP_RESULT, partitions=partitions, retry_for=retry_for,
                    keep_done=float(os.environ.get(KEEP_DONE_ENV, "600")))


def fails_first(job: sd.Job) -> bool:
    """Whether this run is one a ``retry`` job is meant to fail (its first attempt, when its
    body asks for that)."""
    body = job.body
    return isinstance(body, dict) and bool(body.get("fail_first")) and job.attempt == 1


def ready_ms(job: sd.Job) -> int:
    """When the job's stream entry was written (the ms part of its entry id: the server clock),
    a lower bound of its delivery the checker judges cancels and reschedules by."""
    return int(job.entry_id.split("-", 1)[0])


def build(url: str, queue_name: str, out: Path, name: str) -> sd.Worker:
    """The worker with a handler per topic of ``TOPICS``, every run recorded."""
    queue = queue_for(url, queue_name)
    worker = sd.Worker(queue, group="nemesis", concurrency=16, shutdown_grace=5)
    record = Recorder(out, f"worker-{name}-{os.getpid()}")
    who = f"{name}:{os.getpid()}"

    async def run(job: sd.Job, *, fail: bool = False, value: Any = None) -> Any:
        record.note("start", job.id, attempt=job.attempt, worker=who, topic=job.topic,
                    due_ms=job.due, ready_ms=ready_ms(job), entry=job.entry_id)
        await asyncio.sleep(random.uniform(*WORK_S))
        if fail:
            record.note("end", job.id, attempt=job.attempt, worker=who, outcome="fail")
            raise RuntimeError(f"{job.id} fails its attempt {job.attempt} (the retry workload)")
        record.note("end", job.id, attempt=job.attempt, worker=who, outcome="ok", value=value)
        return value

    async def plain(job: sd.Job) -> Any:
        return await run(job)

    for topic in ("plain", "keyed", "flow", "prio", "dense"):
        worker.handler(topic)(plain)

    @worker.handler("retry")
    async def retry(job: sd.Job) -> Any:
        return await run(job, fail=fails_first(job))

    @worker.handler("result")
    async def result(job: sd.Job) -> Any:
        return await run(job, value=int(job.body["n"]) * 2)

    @worker.handler("callback")
    async def callback(job: sd.Job) -> Any:
        record.note("callback", job.id, batch=job.id.rsplit("@", 1)[0],
                    which=job.id.rsplit("@", 1)[-1], attempt=job.attempt, worker=who)
        return await run(job)

    return worker


def rogue(url: str, queue_name: str, out: Path, name: str, stop: threading.Event) -> None:
    """Run delayed jobs before they are due (the broken worker ``--rogue`` makes): list them
    every 100 ms and record a run of each at once."""
    queue = queue_for(url, queue_name)
    record = Recorder(out, f"rogue-{name}-{os.getpid()}")
    seen: set[str] = set()
    while not stop.wait(0.1):
        try:
            page = queue.jobs("delayed", limit=100)
        except sd.StreamdelayError:
            continue
        for job in page.jobs:
            if job.id in seen or job.due <= time.time() * 1000 + 200:
                continue  # only runs clearly early: the checker must see them, not guess
            seen.add(job.id)
            record.note("start", job.id, attempt=1, worker=f"rogue:{os.getpid()}",
                        topic=job.topic)
            record.note("end", job.id, attempt=1, worker=f"rogue:{os.getpid()}", outcome="ok",
                        value=None)


def break_build(name: str) -> None:
    """Make this process a broken build: the one-line change ``BROKEN[name]`` in its copy of
    one Lua script (the scripts are read once per process: ``load_scripts`` is cached)."""
    from streamdelay.protocol.scripts import Script, load_scripts

    script_name, old, new = BROKEN[name]
    scripts = load_scripts()
    found = scripts[script_name]
    if found.source.count(old) != 1:
        raise SystemExit(f"--broken {name}: the line to break is not once in {script_name}")
    scripts[script_name] = Script(found.name, found.num_keys, found.source.replace(old, new))


def main(argv: list[str]) -> None:
    """Run one worker process until SIGTERM (SIGKILL from the nemesis)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(process)d %(message)s")
    parser = argparse.ArgumentParser(prog="nemesis-app")
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("out", type=Path)
    parser.add_argument("name")
    parser.add_argument("--rogue", action="store_true")
    parser.add_argument("--broken", choices=sorted(BROKEN))
    args = parser.parse_args(argv)
    if args.broken:
        break_build(args.broken)
    stop = threading.Event()
    if args.rogue:
        threading.Thread(target=rogue, args=(args.url, args.queue, args.out, args.name, stop),
                         daemon=True).start()
    try:
        build(args.url, args.queue, args.out, args.name).run()
    finally:
        stop.set()


if __name__ == "__main__":
    main(sys.argv[1:])
