"""Jobs of staged topics (priorities, fairness keys: docs/priorities.md) written the way the
producer writes them (DESIGN-18: ``PREFIX opts`` id -> ``<priority>|<deadline_ms>|<key>``, the
``staged`` flags, ids ``{key}rest`` placed by their key), through the public enqueue once it
takes ``priority`` and ``key``, else by the enqueue script and plain HSETs: the take side is
tested either way.
"""

from __future__ import annotations

import inspect
import json
import zlib
from collections.abc import Iterable

import redis

import streamdelay as sd
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import script

StagedJob = tuple[str, int, str | None]  # (name, priority, key)


def producer_speaks_keys() -> bool:
    """Whether ``Queue.enqueue`` takes ``priority`` and ``key`` (branch h-prod merged)."""
    return "key" in inspect.signature(sd.Queue.enqueue).parameters


def job_id(name: str, key: str | None) -> str:
    """The id a job of ``key`` gets: ``{key}name``."""
    return name if key is None else f"{{{key}}}{name}"


def partition(jid: str, partitions: int) -> int:
    """A job's partition: that of its key for ``{key}rest`` (DESIGN-18), else as before."""
    if jid.startswith("{") and "}" in jid:
        return zlib.crc32(jid[1:jid.index("}")].encode()) % partitions
    return partition_of(jid, partitions)


def enqueue_staged(q: sd.Queue, topic: str, jobs: Iterable[StagedJob], body: object = None,
                   at_ms: int | None = None, ttr_ms: int = 60000) -> list[str]:
    """Enqueue each (name, priority, key) to ``topic``, due now (or at ``at_ms``, epoch ms);
    the ids written, in order. ``body`` None: ``{"n": name}``."""
    jobs = list(jobs)
    if producer_speaks_keys():
        return [q.enqueue(topic, body if body is not None else {"n": name},
                          id=name, priority=priority, key=key, ttr=ttr_ms / 1000,
                          **({"at": at_ms / 1000} if at_ms is not None else {}))
                .id for name, priority, key in jobs]
    r = redis.Redis.from_url(q.config.url)
    src = script("enqueueJobs").source
    ids = []
    try:
        r.hset(PartitionKeys(q.name, 0).staged, topic, 1)
        for name, priority, key in jobs:
            jid = job_id(name, key)
            keys = PartitionKeys(q.name, partition(jid, q.config.partitions))
            r.hset(keys.staged, topic, 1)
            if priority != 5 or key is not None:
                r.hset(keys.prefix + "opts", jid, f"{priority}||{key or ''}")
            data = json.dumps(body if body is not None else {"n": name}).encode()
            kind, when = ("r", 0) if at_ms is None else ("a", at_ms)
            r.eval(src, 6, *keys.script_keys(), 3600000, 0, "0", jid, topic, kind, when, ttr_ms,
                   10, 0, encode_blob("j", data, {}, None))
            ids.append(jid)
    finally:
        r.close()
    return ids
