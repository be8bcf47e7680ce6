"""SAQ in the peers harness: ``Queue.enqueue(..., scheduled=...)`` one call per job; one ``saq``
worker process with default settings (concurrency 10, schedule poll every 1 s)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from saq import Queue

from benchmarks.peers.record import body, record, url

DIST = "saq"
WORKER_NOTE = "`saq benchmarks.peers.saq_peer.settings` (defaults: 1 process, concurrency 10, " \
              "scheduler poll 1 s); async handler"
ONE_AT_A_TIME = "`concurrency: 1` (`settings_one`)"  # the concurrency-1 drain


async def noop(ctx: dict[str, Any], *, job_body: dict[str, Any]) -> None:
    """The no-op handler: record the job id and the time."""
    record(job_body["id"])


settings = {"queue": Queue.from_url(url(), name="bench"), "functions": [noop]}
settings_one = {**settings, "concurrency": 1}  # one job at a time (the concurrency-1 drain)


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``enqueue`` per job, scheduled at its due time; seconds for the loop."""

    async def go() -> float:
        queue = Queue.from_url(url(), name="bench")
        await queue.connect()
        try:
            began = time.perf_counter()
            for job_id, due in jobs:
                await queue.enqueue("noop", key=job_id, scheduled=due, job_body=body(job_id))
            return time.perf_counter() - began
        finally:
            await queue.disconnect()

    return asyncio.run(go())


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (``one_at_a_time``: concurrency 1)."""
    settings = "settings_one" if one_at_a_time else "settings"
    return [str(Path(sys.executable).parent / "saq"), f"benchmarks.peers.saq_peer.{settings}"]
