"""RQ in the peers harness: ``Queue.enqueue_at`` one call per job; one ``rq worker
--with-scheduler`` process (default ``Worker``: forks a work horse per job; scheduler polls
every second)."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from redis import Redis
from rq import Queue

from benchmarks.peers.record import body, record, url

DIST = "rq"
WORKER_NOTE = "`rq worker --with-scheduler bench` (default `Worker`: 1 process, forks a work " \
              "horse per job; the scheduler is needed for delayed jobs)"
ONE_AT_A_TIME = "its default (one work horse at a time)"  # the concurrency-1 drain


def noop(job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``enqueue_at`` per job; seconds for the loop."""
    conn = Redis.from_url(url())
    try:
        queue = Queue("bench", connection=conn)
        began = time.perf_counter()
        for job_id, due in jobs:
            queue.enqueue_at(dt.datetime.fromtimestamp(due, dt.timezone.utc), noop,
                             body(job_id), job_id=job_id)
        return time.perf_counter() - began
    finally:
        conn.close()


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (one work horse at a time: ``one_at_a_time``
    too)."""
    return [str(Path(sys.executable).parent / "rq"), "worker", "--url", url(),
            "--with-scheduler", "--logging_level", "WARNING", "bench"]
