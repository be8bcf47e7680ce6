"""Jobs with a deadline for the expiry tests (docs/expiry.md): the deadline is the field the
producer writes in ``PREFIX opts`` (``<priority>|<deadline_ms>|<key>``, DESIGN of SPEC §18),
set here on the server clock, so a test decides exactly when a job expires."""

from __future__ import annotations

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys


def opts_key(q: sd.Queue, partition: int = 0) -> str:
    """The partition's job options hash."""
    return PartitionKeys(q.name, partition).prefix + "opts"


def server_ms(q: sd.Queue) -> int:
    """The Redis server clock, epoch ms."""
    seconds, micros = q.client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def give_deadline(q: sd.Queue, job_id: str, in_ms: int, partition: int = 0) -> int:
    """Give an enqueued job the deadline ``in_ms`` from now (server clock); returns it."""
    deadline = server_ms(q) + in_ms
    q.client.hset(opts_key(q, partition), job_id, f"5|{deadline}|")
    return deadline


def deadline_of(q: sd.Queue, job_id: str, partition: int = 0) -> int | None:
    """The job's stored deadline (None: none)."""
    raw = q.client.hget(opts_key(q, partition), job_id)
    if raw is None:
        return None
    part = raw.decode().split("|")[1]
    return int(part) if part else None
