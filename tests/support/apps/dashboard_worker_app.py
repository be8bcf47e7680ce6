"""A worker for the dashboard's browser tests (tests/system/web/test_dashboard_browser.py):
``streamdelay worker tests.support.apps.dashboard_worker_app:worker --url URL``.

The queue name comes from ``DASH_APP_QUEUE``. Topic ``work`` takes 20 ms per job (so counts
move visibly); topic ``flaky`` fails while the file ``DASH_APP_FAIL`` exists, and succeeds once
the test removed it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import streamdelay as sd

queue = sd.Queue(os.environ.get("DASH_APP_QUEUE", "dashapp"), url="redis://127.0.0.1:1/0")
worker = sd.Worker(queue, group="dash-app", concurrency=4, shutdown_grace=5)


@worker.handler("work")
async def work(job: sd.Job) -> None:
    """A job that takes a little while."""
    await asyncio.sleep(0.02)


@worker.handler("flaky")
async def flaky(job: sd.Job) -> None:
    """Fails while the test's marker file exists."""
    if Path(os.environ["DASH_APP_FAIL"]).exists():
        raise RuntimeError("the flaky service is down")
