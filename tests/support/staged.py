"""Jobs of staged topics (priorities, fairness keys: docs/priorities.md) written the way the
producer writes them (DESIGN: ``PREFIX opts`` id -> ``<priority>|<deadline_ms>|<key>``, the
``staged`` flags, ids ``{key}rest``), through the public enqueue when it takes ``priority`` and
``key``, else by the enqueue script and plain HSETs: the take side is tested either way.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable

import redis

import streamdelay as sd
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import script

StagedJob = tuple[str, int, str | None]  # (id, priority, key)


def producer_speaks_keys() -> bool:
    """Whether ``Queue.enqueue`` takes ``priority`` and ``key`` (branch h-prod merged)."""
    return "key" in inspect.signature(sd.Queue.enqueue).parameters


def job_id(name: str, key: str | None) -> str:
    """The id a job of ``key`` gets: ``{key}name``."""
    return name if key is None else f"{{{key}}}{name}"


def enqueue_staged(q: sd.Queue, topic: str, jobs: Iterable[StagedJob], body: object = None,
                   delay_ms: int = 0) -> list[str]:
    """Enqueue each (name, priority, key) to ``topic``; the ids written, in order."""
    jobs = list(jobs)
    if producer_speaks_keys():
        return [q.enqueue(topic, body if body is not None else {"n": name}, id=name,  # type: ignore[call-arg]
                          priority=priority, key=key, delay=delay_ms / 1000)
                for name, priority, key in jobs]
    r = redis.Redis.from_url(q.config.url)
    src = script("enqueueJobsV2").source
    ids = []
    try:
        r.hset(PartitionKeys(q.name, 0).staged, topic, 1)
        for name, priority, key in jobs:
            jid = job_id(name, key)
            keys = PartitionKeys(q.name, partition_of(jid, q.config.partitions))
            r.hset(keys.staged, topic, 1)
            if priority != 5 or key is not None:
                r.hset(keys.prefix + "opts", jid, f"{priority}||{key or ''}")
            blob = encode_blob("j", json.dumps(body if body is not None else {"n": name}).encode(),
                               {}, None)
            r.eval(src, 6, *keys.script_keys(), 3600000, 0, jid, topic, "r", delay_ms, 60000,
                   10, 0, blob)
            ids.append(jid)
    finally:
        r.close()
    return ids
