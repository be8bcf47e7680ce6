"""A worker module for the schedule tests: ``streamdelay worker
tests.support.apps.schedule_app:worker``.

The queue name comes from ``SCHEDULE_APP_QUEUE`` and the URL from ``--url``. At import (that is,
at every worker start) it declares the schedule ``tick`` (every second, topic ``sched.tick``):
declaring is idempotent. Each handled tick appends ``<id> <attempt>`` to ``SCHEDULE_APP_OUT``.
"""

from __future__ import annotations

import os
from pathlib import Path

import streamdelay as sd

queue = sd.Queue(os.environ.get("SCHEDULE_APP_QUEUE", "schedapp"), ttr=30)
# missed="all": even a machine so loaded that no dispatcher ran for 3 s loses no tick
queue.schedule("tick", "sched.tick", {"n": 1}, every=1, missed="all")
worker = sd.Worker(queue, group="sched-app", concurrency=4, shutdown_grace=10)


@worker.handler("sched.tick")
def tick(job: sd.Job) -> None:
    """Record the tick."""
    with Path(os.environ["SCHEDULE_APP_OUT"]).open("a") as out:
        out.write(f"{job.id} {job.attempt}\n")
