"""A worker module for the process executor's tests: ``streamdelay worker
tests.support.apps.process_worker_app:worker --processes 2``.

The queue name comes from ``PE_QUEUE``; ``PE_MAX_JOBS`` sets ``max_jobs_per_child``. Each
handler appends ``start <id> <attempt> <pid>`` to the file ``PE_OUT`` before it works, so a test
knows which child runs which attempt.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import streamdelay as sd

queue = sd.Queue(os.environ.get("PE_QUEUE", "peapp"), ttr=30, backoff=[0.1], max_attempts=3,
                 events=True)
_max_jobs = os.environ.get("PE_MAX_JOBS")
worker = sd.Worker(queue, group="pe-app", executor="process", processes=2, handler_timeout=2,
                   shutdown_grace=5, abort_grace=1,
                   max_jobs_per_child=int(_max_jobs) if _max_jobs else None)


def record(job: sd.Job, what: str = "start") -> None:
    """Append the start line of this run (or another ``what``; flushed at once)."""
    with Path(os.environ["PE_OUT"]).open("a") as out:
        out.write(f"{what} {job.id} {job.attempt} {os.getpid()}\n")


@worker.handler("pe.work")
def work(job: sd.Job) -> dict[str, Any]:
    """Sleep ``sleep`` s (on the first attempt ``first_sleep`` s instead), return the pid."""
    record(job)
    seconds = job.body.get("first_sleep", 0) if job.attempt == 1 else 0
    time.sleep(seconds or job.body.get("sleep", 0))
    job.progress(100)
    return {"pid": os.getpid(), "n": job.body.get("n")}


@worker.handler("pe.exit")
def exit_first(job: sd.Job) -> int:
    """End the child with ``os._exit(3)`` on the first attempt; return the pid after."""
    record(job)
    if job.attempt == 1:
        os._exit(3)
    return os.getpid()


@worker.handler("pe.spin")
def spin_first(job: sd.Job) -> int:
    """Spin for ever on the first attempt (only a kill ends it); return the pid after."""
    record(job)
    while job.attempt == 1:
        pass
    return os.getpid()


@worker.handler("pe.async")
async def async_pid(job: sd.Job) -> int:
    """An async def handler runs in a child's event loop too."""
    record(job)
    await asyncio.sleep(0.01)
    return os.getpid()


@worker.handler("pe.fail")
def fail(job: sd.Job) -> None:
    """Raise ``ValueError`` (its text and frames reach the dead letter)."""
    record(job)
    raise ValueError(f"no luck for {job.body.get('n')}")


@worker.handler("pe.abortable")
def abortable(job: sd.Job) -> None:
    """Sleep for ever in short steps; an abort's SIGTERM ends it (``finally`` runs)."""
    record(job)
    try:
        while True:
            time.sleep(0.05)
    finally:
        record(job, "cleanup")


@worker.handler("pe.stubborn")
def stubborn(job: sd.Job) -> None:
    """Ignore the abort's SIGTERM (``SystemExit`` swallowed): SIGKILL after abort_grace."""
    record(job)
    while True:
        try:
            time.sleep(0.05)
        except SystemExit:
            record(job, "ignored")


@worker.handler("pe.resume")
def resume(job: sd.Job) -> dict[str, Any]:
    """Checkpoint, then snooze once and fail once; report what the last run saw."""
    record(job)
    seen = job.last_checkpoint
    if seen is None:
        job.checkpoint({"step": 1})
        raise sd.Snooze(0.1)
    if seen["step"] == 1:
        job.checkpoint({"step": 2})
        raise RuntimeError("fails once after the snooze")
    return {"attempt": job.attempt, "seen": seen}


@worker.handler("pe.segfault")
def segfault_first(job: sd.Job) -> int:
    """Read address 0 on the first attempt (SIGSEGV); return the pid after."""
    record(job)
    if job.attempt == 1:
        import ctypes

        ctypes.string_at(0)
    return os.getpid()
