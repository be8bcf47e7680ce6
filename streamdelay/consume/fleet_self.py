"""What a worker says of itself in the fleet record (docs/operations.md#workers): built from
what it holds in memory at each renewal, no call of its own, no write per job; and when to
renew it (``until_renewal``: every ``fleet_every``, or within a second of a change)."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterable
from functools import cache
from importlib import metadata

from ..base.fleet import WorkerState
from ..protocol.fleet_records import info_blob
from .delivery import Delivery


@cache
def package_version() -> str:
    """This release's version as installed ('' when not installed as a distribution)."""
    try:
        return metadata.version("streamdelay")
    except metadata.PackageNotFoundError:
        return ""


class FleetSelf:
    """The fixed part of a worker's fleet entry (host, pid, start), and the JSON of one renewal."""

    def __init__(self, group: str, concurrency: int) -> None:
        self.group = group
        self.concurrency = concurrency
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_ms = int(time.time() * 1000)

    def blob(self, topics: Iterable[str], running: Iterable[Delivery], stopping: bool,
             quiet: bool = False) -> str:
        """The entry's JSON now: ``stopping`` once a graceful stop began, else ``quiet`` once
        an operator quieted it (docs/operations.md#quiet-and-stop)."""
        state: WorkerState = "stopping" if stopping else "quiet" if quiet else "running"
        return info_blob(host=self.host, pid=self.pid, version=package_version(),
                         group=self.group, topics=list(topics), concurrency=self.concurrency,
                         started_ms=self.started_ms,
                         running=[(d.job_id, d.began) for d in running], state=state)


RUNNING_SAY_S = 1.0  # a changed entry (other jobs running) is told at most this often


async def until_renewal(every: float, entry: Callable[[], str]) -> None:
    """Wait until the fleet entry is to be renewed: ``every`` seconds from now, or sooner, at
    the first tick (every ``RUNNING_SAY_S``) that finds ``entry()`` (what the worker would
    write now) changed since the wait began: the jobs it runs are at most about a second stale
    in ``Queue.workers`` while it is busy, at most one write a second, none per job
    (docs/operations.md#workers)."""
    told = entry()
    left = every
    while left > 0:
        step = min(RUNNING_SAY_S, left)
        await asyncio.sleep(step)
        left -= step
        if left > 0 and entry() != told:
            return
