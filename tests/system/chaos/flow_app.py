"""The worker of the workflow chaos run (``tests/system/chaos/flow_run.py``), started as a real
``streamdelay worker tests.system.chaos.flow_app:worker --url URL --partitions P`` process (which
also runs the embedded dispatcher, so the outbox forwarding of docs/workflows.md#across-
partitions).

Environment: ``CHAOS_FLOW_URL`` (Redis URL), ``CHAOS_FLOW_QUEUE`` (queue name),
``CHAOS_FLOW_OUT`` (history directory); the partition count comes from
``STREAMDELAY_PARTITIONS``, as for any ``sd.Queue``. Every
run of the ``flow`` topic (batch members, chain links and the batches' callbacks alike) appends
to ``CHAOS_FLOW_OUT/<pid>.jsonl`` one line when it starts and one when its work is done, each
flushed before the handler goes on (a line written means it happened; a line cut by SIGKILL is
not read): ``{"ev": "start"|"end", "id", "attempt", "created", "pid", "us"}``, ``us`` the
server clock (Redis ``TIME``, µs) so every process's times compare with the scripts' clock; a
run that could not read that clock (Redis down) writes ``"ev": "error"`` and fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path

import redis.asyncio as aioredis

import streamdelay as sd

TOPIC = "flow"
TTR = 3.0  # a killed worker's jobs are reclaimed 3 s after its last heartbeat
CLOCK_TRIES = 50  # 5 s of tries for the server clock


def record_line(event: str, job: sd.Job, us: int) -> str:
    """One history line."""
    return json.dumps({"ev": event, "id": job.id, "attempt": job.attempt,
                       "created": job.created, "pid": os.getpid(), "us": us}) + "\n"


def worker() -> sd.Worker:
    """The Worker object ``streamdelay worker`` runs (the CLI's ``--url`` and ``--partitions``
    override the queue's)."""
    url = os.environ["CHAOS_FLOW_URL"]
    queue = sd.Queue(os.environ["CHAOS_FLOW_QUEUE"], url=url, ttr=TTR, max_attempts=100,
                     backoff=[0.2])
    out = (Path(os.environ["CHAOS_FLOW_OUT"]) / f"{os.getpid()}.jsonl").open("a", buffering=1)
    clock: list[aioredis.Redis] = []
    w = sd.Worker(queue, group="flow", concurrency=32, shutdown_grace=5)

    async def server_us() -> int:
        if not clock:  # one client per process, made in the worker's event loop
            clock.append(aioredis.from_url(url, socket_timeout=5))
        for _ in range(CLOCK_TRIES):  # a pooled connection from before a Redis restart fails once
            try:
                seconds, micros = await clock[0].time()
                return int(seconds) * 1_000_000 + int(micros)
            except (aioredis.ConnectionError, aioredis.TimeoutError, OSError):
                await asyncio.sleep(0.1)
        raise ConnectionError("no Redis clock")

    @w.handler(TOPIC)
    async def flow(job: sd.Job) -> None:
        try:
            out.write(record_line("start", job, await server_us()))
            out.flush()
            await asyncio.sleep(random.uniform(0, 0.01))
            out.write(record_line("end", job, await server_us()))
            out.flush()
        except Exception:
            # Redis was unreachable for the clock: the run fails and is retried (at-least-once);
            # the verdict explains the next run by this line (wall clock: no server to ask)
            out.write(record_line("error", job, int(time.time() * 1_000_000)))
            out.flush()
            raise

    return w
