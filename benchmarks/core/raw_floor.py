"""The raw floor of a job's life: the same jobs through plain commands, batched as the scripts
batch them (HSET + ZADD; ZRANGEBYSCORE + ZREM + XADD; XREADGROUP; XACK + XDEL + HDEL). One copy
for every benchmark that sets a script's cost beside it (``e2e/life.py``,
``micro/script_cost.py``), so both compare with the same floor."""

from __future__ import annotations

from typing import Any

import redis

ENQUEUE_BATCH, PROMOTE_BATCH, READ_COUNT = 100, 200, 64


def enqueue(client: redis.Redis, jobs_key: str, delayed: str, jobs: int, record: bytes,
            due: int) -> None:
    """``jobs`` records (ids ``j0``...) and their due times, ``ENQUEUE_BATCH`` per pipeline."""
    for start in range(0, jobs, ENQUEUE_BATCH):
        ids = [f"j{i}" for i in range(start, min(jobs, start + ENQUEUE_BATCH))]
        pipe = client.pipeline(transaction=False)
        pipe.hset(jobs_key, mapping={i: record for i in ids})
        pipe.zadd(delayed, {i: due for i in ids})
        pipe.execute()


def promote(client: redis.Redis, delayed: str, stream: str, due: int, record: bytes) -> None:
    """Every job due by ``due`` into ``stream``, ``PROMOTE_BATCH`` per round."""
    while True:
        ids = client.zrangebyscore(delayed, "-inf", due, start=0, num=PROMOTE_BATCH)
        if not ids:
            return
        pipe = client.pipeline(transaction=False)
        pipe.zrem(delayed, *ids)
        for job in ids:
            pipe.xadd(stream, {"id": job, "rec": record})
        pipe.execute()


def read(client: redis.Redis, stream: str, group: str) -> list[tuple[Any, Any]]:
    """Up to ``READ_COUNT`` new entries of ``stream`` for consumer ``c`` ([] when none)."""
    reply: Any = client.xreadgroup(group, "c", {stream: ">"}, count=READ_COUNT)
    return list(reply[0][1]) if reply and reply[0][1] else []


def ack(client: redis.Redis, stream: str, group: str, jobs_key: str,
        entries: list[tuple[Any, Any]]) -> None:
    """Settle ``entries``: XACK, XDEL and the records' HDEL in one pipeline."""
    pipe = client.pipeline(transaction=False)
    pipe.xack(stream, group, *[e for e, _ in entries])
    pipe.xdel(stream, *[e for e, _ in entries])
    pipe.hdel(jobs_key, *[f[b"id"] for _, f in entries])
    pipe.execute()
