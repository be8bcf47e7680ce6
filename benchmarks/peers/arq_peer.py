"""arq in the peers harness: ``enqueue_job(..., _defer_until=...)`` one call per job; one
``arq`` worker process with default settings (max_jobs 10, poll_delay 0.5 s)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

from arq import create_pool
from arq.connections import RedisSettings

from benchmarks.peers.record import body, record, url

DIST = "arq"
WORKER_NOTE = "`arq benchmarks.peers.arq_peer.WorkerSettings` (defaults: 1 process, " \
              "max_jobs 10, poll_delay 0.5 s); async handler"
ONE_AT_A_TIME = "`max_jobs = 1` (`WorkerSettingsOne`)"  # the concurrency-1 drain


async def noop(ctx: dict[str, Any], job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


class WorkerSettings:
    """arq's worker settings (all defaults but the function list and the URL)."""

    functions = [noop]  # noqa: RUF012
    redis_settings = RedisSettings.from_dsn(url())


class WorkerSettingsOne:
    """The same, one job at a time (the concurrency-1 drain); arq reads a settings class's own
    ``__dict__``, so nothing is inherited."""

    functions = [noop]  # noqa: RUF012
    redis_settings = RedisSettings.from_dsn(url())
    max_jobs = 1


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``enqueue_job`` per job, deferred until its due time; seconds for the loop."""

    async def go() -> float:
        pool = await create_pool(RedisSettings.from_dsn(url()))
        try:
            began = time.perf_counter()
            for job_id, due in jobs:
                await pool.enqueue_job("noop", body(job_id), _job_id=job_id,
                                       _defer_until=dt.datetime.fromtimestamp(due, dt.timezone.utc))
            return time.perf_counter() - began
        finally:
            await pool.aclose()

    return asyncio.run(go())


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (``one_at_a_time``: ``max_jobs = 1``)."""
    settings = "WorkerSettingsOne" if one_at_a_time else "WorkerSettings"
    return [str(Path(sys.executable).parent / "arq"), f"benchmarks.peers.arq_peer.{settings}"]
