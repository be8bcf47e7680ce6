"""A worker module for the CLI tests: ``streamdelay worker
tests.support.apps.cli_worker_app:worker``.

The queue name comes from ``CLI_APP_QUEUE``; its URL is deliberately unreachable so the tests
prove that ``--url`` overrides it. Each handler appends a line to the file ``CLI_APP_OUT``:
``done <id> <attempt>`` for ``cli.echo``; ``start <id>`` then ``done <id> <attempt>`` for
``cli.slow`` (which takes ``body["seconds"]``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import streamdelay as sd

UNREACHABLE_URL = "redis://127.0.0.1:1/0"

queue = sd.Queue(os.environ.get("CLI_APP_QUEUE", "cliapp"), url=UNREACHABLE_URL, ttr=30)
worker = sd.Worker(queue, group="cli-app", concurrency=4, shutdown_grace=10)


def record(line: str) -> None:
    """Append one line to the output file (flushed at once)."""
    with Path(os.environ["CLI_APP_OUT"]).open("a") as out:
        out.write(line + "\n")


@worker.handler("cli.echo")
def echo(job: sd.Job) -> None:
    """Record the job."""
    record(f"done {job.id} {job.attempt}")


@worker.handler("cli.slow")
async def slow(job: sd.Job) -> None:
    """Record the start, take a while, record the end."""
    record(f"start {job.id}")
    await asyncio.sleep(float(job.body["seconds"]))
    record(f"done {job.id} {job.attempt}")


def make_worker() -> sd.Worker:
    """A factory, for ``module:make_worker``."""
    return worker


not_a_worker = 42
