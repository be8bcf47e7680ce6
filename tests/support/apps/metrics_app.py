"""A worker module for the metrics tests: ``streamdelay worker
tests.support.apps.metrics_app:worker``.

The queue name comes from ``METRICS_APP_QUEUE`` (its URL from ``--url``). Topics: ``m.ok``
succeeds after ``body["ms"]`` milliseconds (default 0), ``m.drop`` raises ``sd.Drop``,
``m.fail`` always fails (retried once after 50 ms, then dead: ``max_attempts=2`` at enqueue).
"""

from __future__ import annotations

import asyncio
import os

import streamdelay as sd

queue = sd.Queue(os.environ.get("METRICS_APP_QUEUE", "metricsapp"))
worker = sd.Worker(queue, group="metrics-app", concurrency=16, shutdown_grace=5)


@worker.handler("m.ok")
async def ok(job: sd.Job) -> None:
    """Succeed after ``body["ms"]`` milliseconds."""
    await asyncio.sleep(float((job.body or {}).get("ms", 0)) / 1000)


@worker.handler("m.drop")
def drop(job: sd.Job) -> None:
    """Give up on the job without retrying it."""
    raise sd.Drop()


@worker.handler("m.fail")
async def fail(job: sd.Job) -> None:
    """Fail; retried after 50 ms until the job's attempts are used up."""
    raise sd.Retry(delay=0.05)
