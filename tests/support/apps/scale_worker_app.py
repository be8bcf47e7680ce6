"""A worker for the failover tests: ``streamdelay worker
tests.support.apps.scale_worker_app:worker``.

The queue name comes from ``SCALE_APP_QUEUE`` and its partition count from
``SCALE_APP_PARTITIONS`` (default 1); the URL is given with ``--url``. The handler of topic ``t``
appends ``<job id>`` to the file ``SCALE_APP_OUT`` (one line per delivery, flushed at once).
"""

from __future__ import annotations

import os
from pathlib import Path

import streamdelay as sd

queue = sd.Queue(os.environ.get("SCALE_APP_QUEUE", "scaleapp"), url="redis://127.0.0.1:1/0",
                 partitions=int(os.environ.get("SCALE_APP_PARTITIONS", "1")), ttr=3)
worker = sd.Worker(queue, group="scale-app", concurrency=16, reclaim_interval=0.5,
                   shutdown_grace=5)


@worker.handler("t")
def record(job: sd.Job) -> None:
    """Record the delivery."""
    with Path(os.environ["SCALE_APP_OUT"]).open("a") as out:
        out.write(job.id + "\n")
