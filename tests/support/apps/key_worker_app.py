"""A worker for the key limit tests:
``streamdelay worker tests.support.apps.key_worker_app:worker``.

The queue name comes from ``KEY_APP_QUEUE`` (2 partitions); the URL is given with ``--url``. The
handler of topic ``keyed`` appends ``<job id> <attempt> <pid>`` to ``KEY_APP_OUT`` at its start (and
the same with `` end`` at its end), and records its start and end, stamped by the server clock,
in the list ``KEY_APP_QUEUE:runs`` (tests/support/runs.py: the runs of a key at once are read
from there, a kill -9 between the two records included); it sleeps ``KEY_APP_SLEEP`` seconds
(default 0.05). A body ``"hang"`` sleeps an hour on its first attempt.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import redis.asyncio

import streamdelay as sd
from tests.support.runs import RUN

NAME = os.environ.get("KEY_APP_QUEUE", "keyapp")
queue = sd.Queue(NAME, url="redis://127.0.0.1:1/0", partitions=2)
worker = sd.Worker(queue, group="key-app", concurrency=8, shutdown_grace=5)
_client: redis.asyncio.Redis | None = None


@worker.handler("keyed")
async def keyed(job: sd.Job) -> None:
    """Record the start and the end of the run, sleep between."""
    global _client
    if _client is None:
        _client = redis.asyncio.Redis.from_url(os.environ["KEY_APP_URL"])
    key = job.id[1:job.id.index("}")]
    run = f"{key} {job.id}:{job.attempt} {os.getpid()}"
    await _client.eval(RUN, 1, f"{NAME}:runs", f"start {run}")
    with Path(os.environ["KEY_APP_OUT"]).open("a") as out:
        out.write(f"{job.id} {job.attempt} {os.getpid()}\n")
    try:
        await asyncio.sleep(3600 if job.body == "hang" and job.attempt == 1 else
                            float(os.environ.get("KEY_APP_SLEEP", "0.05")))
    finally:
        await _client.eval(RUN, 1, f"{NAME}:runs", f"end {run}")
        with Path(os.environ["KEY_APP_OUT"]).open("a") as out:
            out.write(f"{job.id} {job.attempt} {os.getpid()} end\n")
