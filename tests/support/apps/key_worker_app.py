"""A worker for the key limit tests:
``streamdelay worker tests.support.apps.key_worker_app:worker``.

The queue name comes from ``KEY_APP_QUEUE`` (2 partitions); the URL is given with ``--url``. The
handler of topic ``keyed`` appends ``<job id> <attempt> <pid>`` to ``KEY_APP_OUT`` at its start (and
the same with `` end`` at its end) and
keeps a Redis counter per fairness key of the handlers running now (INCR at start, DECR at the
end), recording each key's peak in the hash ``KEY_APP_QUEUE:peak``; it sleeps ``KEY_APP_SLEEP``
seconds (default 0.05). A body ``"hang"`` sleeps an hour on its first attempt.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import redis.asyncio

import streamdelay as sd

NAME = os.environ.get("KEY_APP_QUEUE", "keyapp")
queue = sd.Queue(NAME, url="redis://127.0.0.1:1/0", partitions=2)
worker = sd.Worker(queue, group="key-app", concurrency=8, shutdown_grace=5)
PEAK = """local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then
  redis.call('HSET', KEYS[2], ARGV[1], n)
end
return n"""
_client: redis.asyncio.Redis | None = None


@worker.handler("keyed")
async def keyed(job: sd.Job) -> None:
    """Record the start, count the running handlers of the job's key, sleep."""
    global _client
    if _client is None:
        _client = redis.asyncio.Redis.from_url(os.environ["KEY_APP_URL"])
    key = job.id[1:job.id.index("}")]
    await _client.eval(PEAK, 2, f"{NAME}:running:{key}", f"{NAME}:peak", key)
    with Path(os.environ["KEY_APP_OUT"]).open("a") as out:  # counted first: a kill -9 between
        out.write(f"{job.id} {job.attempt} {os.getpid()}\n")  # never hides a start
    try:
        await asyncio.sleep(3600 if job.body == "hang" and job.attempt == 1 else
                            float(os.environ.get("KEY_APP_SLEEP", "0.05")))
    finally:
        await _client.decr(f"{NAME}:running:{key}")
        with Path(os.environ["KEY_APP_OUT"]).open("a") as out:
            out.write(f"{job.id} {job.attempt} {os.getpid()} end\n")
