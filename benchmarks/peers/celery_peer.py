"""Celery (Redis broker) in the peers harness: ``apply_async(eta=...)`` one call per job; one
``celery worker --concurrency 1`` (default prefork pool, one child process)."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from celery import Celery

from benchmarks.peers.record import body, record, url

DIST = "celery"
WORKER_NOTE = "`celery -A benchmarks.peers.celery_peer worker --concurrency 1` (default " \
              "prefork pool with one child; the default is one child per core); no result backend"
ONE_AT_A_TIME = "`--concurrency 1`, as in every row"  # the concurrency-1 drain

app = Celery("bench", broker=url())


@app.task(name="noop")
def noop(job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``apply_async`` per job with its ETA; seconds for the loop."""
    began = time.perf_counter()
    for job_id, due in jobs:
        noop.apply_async(args=(body(job_id),), task_id=job_id,
                         eta=dt.datetime.fromtimestamp(due, dt.timezone.utc))
    return time.perf_counter() - began


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (one child: ``one_at_a_time`` too)."""
    return [str(Path(sys.executable).parent / "celery"), "-A", "benchmarks.peers.celery_peer",
            "worker", "--concurrency", "1", "--loglevel", "WARNING"]
