"""``sd.WorkerInfo``: a live consumer of a queue, as its fleet record says
(docs/operations.md#workers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

WorkerState = Literal["running", "quiet", "stopping"]


@dataclass(frozen=True)
class WorkerInfo:
    """A live consumer of the queue (``Queue.workers``), as it last renewed its fleet entry.

    ``started`` and ``last_seen`` are epoch seconds (server clock); ``running`` holds the ids of
    the jobs its handlers ran at that renewal (at most ``RUNNING_SHOWN`` of them, the oldest
    first; ``running_count`` counts them all) and ``running_since`` when each started (epoch
    seconds, the worker's clock). ``kind`` is ``worker`` or ``http`` (a pull/HTTP consumer,
    which has no host, pid or concurrency of its own: ``""``, 0, 0; its ``started`` is its
    last renewal).
    """

    name: str
    host: str
    pid: int
    version: str
    group: str
    topics: tuple[str, ...]
    concurrency: int
    running: tuple[str, ...]
    started: float
    last_seen: float
    state: WorkerState
    running_since: tuple[float, ...] = ()
    running_count: int = 0
    kind: str = "worker"
