"""A worker module for the fleet tests: ``streamdelay worker
tests.support.apps.fleet_worker_app:worker`` (docs/operations.md#workers).

The queue name comes from ``FLEET_APP_QUEUE`` (its URL from ``--url``); ``FLEET_APP_EVERY``
sets how often it renews its fleet entry (seconds; its entry lives three times that), so a test
sees a killed worker's entry expire in seconds. Its topics (``FLEET_APP_TOPICS``, comma
separated, default ``f.slow``) sleep ``body["ms"]`` milliseconds; its group is
``FLEET_APP_GROUP`` (default ``fleet-app``).
"""

from __future__ import annotations

import asyncio
import os

import streamdelay as sd

queue = sd.Queue(os.environ.get("FLEET_APP_QUEUE", "fleetapp"))
worker = sd.Worker(queue, group=os.environ.get("FLEET_APP_GROUP", "fleet-app"), concurrency=4,
                   shutdown_grace=5)
worker.fleet_every = float(os.environ.get("FLEET_APP_EVERY", "15"))


async def slow(job: sd.Job) -> None:
    """Succeed after ``body["ms"]`` milliseconds."""
    await asyncio.sleep(float((job.body or {}).get("ms", 0)) / 1000)


for _topic in os.environ.get("FLEET_APP_TOPICS", "f.slow").split(","):
    worker.handler(_topic)(slow)
