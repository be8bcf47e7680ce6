"""A worker module for the log format tests: ``streamdelay worker
tests.support.apps.log_worker_app``.

The queue name comes from ``LOG_APP_QUEUE``. ``log.ok`` succeeds; ``log.fail`` always raises an
error whose message holds a URL with a password (the logs must mask it).
"""

from __future__ import annotations

import os

import streamdelay as sd

SECRET = "hunter2-in-a-message"

queue = sd.Queue(os.environ.get("LOG_APP_QUEUE", "logapp"), ttr=30)
worker = sd.Worker(queue, group="log-app", concurrency=4, shutdown_grace=5, block=0.2)


@worker.handler("log.ok")
def ok(job: sd.Job) -> None:
    """Succeed."""


@worker.handler("log.fail")
async def fail(job: sd.Job) -> None:
    """Fail, naming a database URL with its password."""
    raise RuntimeError(f"cannot reach redis://app:{SECRET}@db.internal:6379/0")
