"""Huey in the peers harness: ``task.schedule(eta=...)`` one call per job; one
``huey_consumer`` with default settings (1 worker thread, scheduler tick every 1 s)."""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from huey import RedisHuey

from benchmarks.peers.record import body, record, url

DIST = "huey"
WORKER_NOTE = "`huey_consumer benchmarks.peers.huey_peer.huey` (defaults: 1 process, " \
              "1 worker thread, scheduler tick 1 s)"
ONE_AT_A_TIME = "its default (1 worker thread)"  # the concurrency-1 drain

huey = RedisHuey("bench", url=url())


@huey.task()
def noop(job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``schedule`` per job with its ETA; seconds for the loop."""
    began = time.perf_counter()
    for job_id, due in jobs:
        noop.schedule(args=(body(job_id),), eta=dt.datetime.fromtimestamp(due, dt.timezone.utc),
                      id=job_id)
    return time.perf_counter() - began


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (one worker thread: ``one_at_a_time`` too)."""
    return [str(Path(sys.executable).parent / "huey_consumer"),
            "benchmarks.peers.huey_peer.huey", "--logfile", "/dev/null"]
