"""A worker for the pause test: ``streamdelay worker tests.support.apps.pause_worker_app:worker``.

The queue name comes from ``PAUSE_APP_QUEUE`` and its partition count from
``PAUSE_APP_PARTITIONS`` (default 1); the URL is given with ``--url``. The handlers of topics
``held`` and ``other`` append ``<topic> <job id> <wall clock at start>`` to ``PAUSE_APP_OUT``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import streamdelay as sd

queue = sd.Queue(os.environ.get("PAUSE_APP_QUEUE", "pauseapp"), url="redis://127.0.0.1:1/0",
                 partitions=int(os.environ.get("PAUSE_APP_PARTITIONS", "1")))
worker = sd.Worker(queue, group="pause-app", concurrency=8, shutdown_grace=5)


def _record(job: sd.Job) -> None:
    with Path(os.environ["PAUSE_APP_OUT"]).open("a") as out:
        out.write(f"{job.topic} {job.id} {time.time():.6f}\n")


@worker.handler("held")
def held(job: sd.Job) -> None:
    """Record the start of a job of the topic the test pauses."""
    _record(job)


@worker.handler("other")
def other(job: sd.Job) -> None:
    """Record the start of a job of a topic that keeps running."""
    _record(job)
