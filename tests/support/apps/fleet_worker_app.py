"""A worker module for the fleet tests: ``streamdelay worker
tests.support.apps.fleet_worker_app:worker`` (docs/operations.md#workers).

The queue name comes from ``FLEET_APP_QUEUE`` (its URL from ``--url``); ``FLEET_APP_EVERY``
sets how often it renews its fleet entry (seconds; its entry lives three times that), so a test
sees a killed worker's entry expire in seconds. Topic ``f.slow`` sleeps ``body["ms"]``
milliseconds.
"""

from __future__ import annotations

import asyncio
import os

import streamdelay as sd

queue = sd.Queue(os.environ.get("FLEET_APP_QUEUE", "fleetapp"))
worker = sd.Worker(queue, group="fleet-app", concurrency=4, shutdown_grace=5)
worker.fleet_every = float(os.environ.get("FLEET_APP_EVERY", "15"))


@worker.handler("f.slow")
async def slow(job: sd.Job) -> None:
    """Succeed after ``body["ms"]`` milliseconds."""
    await asyncio.sleep(float((job.body or {}).get("ms", 0)) / 1000)
