"""A worker for the limits tests: ``streamdelay worker tests.support.apps.limit_worker_app:worker``.

The queue name comes from ``LIMIT_APP_QUEUE``; the URL is given with ``--url``. The handler of
topic ``limited`` appends ``<job id> <wall clock at start>`` to ``LIMIT_APP_OUT``, and keeps a
Redis counter of the handlers running now (INCR at start, DECR at the end), recording its peak
in ``LIMIT_APP_QUEUE:peak`` (a Lua max, sampled at every start), and records its start and end,
stamped by the server clock, in the list ``LIMIT_APP_QUEUE:runs`` (tests/support/runs.py: a
kill -9 between a start and its count needs no counting down by hand); it sleeps
``LIMIT_APP_SLEEP`` seconds (default 0). The job body ``"hang"`` sleeps an hour (on its first
attempt only: a job reclaimed from a killed worker then runs normally). The queue has
``LIMIT_APP_PARTITIONS`` partitions (default 1).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import redis.asyncio

import streamdelay as sd
from tests.support.runs import RUN

NAME = os.environ.get("LIMIT_APP_QUEUE", "limitapp")
queue = sd.Queue(NAME, url="redis://127.0.0.1:1/0",
                 partitions=int(os.environ.get("LIMIT_APP_PARTITIONS", "1")))
worker = sd.Worker(queue, group="limit-app", concurrency=16, shutdown_grace=5)
_PEAK = """local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n"""
_client: redis.asyncio.Redis | None = None


@worker.handler("limited")
async def limited(job: sd.Job) -> None:
    """Record the start, count the running handlers, sleep."""
    global _client
    if _client is None:
        _client = redis.asyncio.Redis.from_url(os.environ["LIMIT_APP_URL"])
    with Path(os.environ["LIMIT_APP_OUT"]).open("a") as out:
        out.write(f"{job.id} {time.time():.6f} {os.getpid()}\n")
    run = f"{job.topic} {job.id}:{job.attempt} {os.getpid()}"
    await _client.eval(RUN, 1, f"{NAME}:runs", f"start {run}")
    await _client.eval(_PEAK, 2, f"{NAME}:running", f"{NAME}:peak")
    try:
        await asyncio.sleep(3600 if job.body == "hang" and job.attempt == 1 else
                            float(os.environ.get("LIMIT_APP_SLEEP", "0")))
    finally:
        await _client.decr(f"{NAME}:running")
        await _client.eval(RUN, 1, f"{NAME}:runs", f"end {run}")
