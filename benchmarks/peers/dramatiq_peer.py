"""Dramatiq in the peers harness: ``send_with_options(delay=...)`` one call per job; one
``dramatiq --processes 1`` worker process (default 8 threads)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from benchmarks.peers.record import body, record, url

DIST = "dramatiq"
WORKER_NOTE = "`dramatiq --processes 1 benchmarks.peers.dramatiq_peer` (default 8 threads; " \
              "the default is one process per core)"
ONE_AT_A_TIME = "`--threads 1`"  # the concurrency-1 drain (benchmarks/peers/run.py)

broker = RedisBroker(url=url())
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="bench")
def noop(job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``send_with_options`` per job, delay = due - now in ms; seconds for the loop."""
    began = time.perf_counter()
    for job_id, due in jobs:
        noop.send_with_options(args=(body(job_id),),
                               delay=max(0, int((due - time.time()) * 1000)))
    return time.perf_counter() - began


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (``one_at_a_time``: one thread)."""
    return [str(Path(sys.executable).parent / "dramatiq"), "--processes", "1",
            *(["--threads", "1"] if one_at_a_time else []), "benchmarks.peers.dramatiq_peer"]
