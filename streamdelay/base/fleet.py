"""``sd.WorkerInfo``: a live consumer of a queue, as its fleet record says
(docs/operations.md#workers); ``sd.DeadRetention``: the dead-letter retention in force."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .durations import format_duration

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


@dataclass(frozen=True)
class DeadRetention:
    """The dead-letter retention in force on a queue (``Queue.dead_retention``), as stored in
    Redis by the last process that set it: ``dead_ttl`` seconds, ``dead_max`` jobs per topic;
    None where unset (dead jobs kept until replayed or purged;
    docs/reliability.md#dead-letter-retention)."""

    dead_ttl: float | None
    dead_max: int | None

    def text(self) -> str:
        """One line saying it, as ``streamdelay dead retention`` and the dashboard's dead list
        print it."""
        kept = [f"for {format_duration(self.dead_ttl)}" if self.dead_ttl else "",
                f"the newest {self.dead_max} per topic" if self.dead_max else ""]
        if not any(kept):
            return "Dead jobs are kept until replayed or purged (no dead_ttl or dead_max)."
        return ("Dead jobs are kept " + " and at most ".join(k for k in kept if k)
                + "; older or surplus ones are purged by the dispatchers.")

