"""A worker's view of the paused topics (docs/operations.md#pause-and-resume): read when it
starts and every ``REFRESH_S`` seconds after; entries of a paused topic that a read already in
flight returns are handed back (``releaseJobs``, not an attempt). The key and the plans are in
``producer/pausing.py``."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..base.errors import StreamdelayError
from ..engine.constants import REFRESH_S, START_PATIENCE
from ..producer.pausing import parse_paused, paused_key
from ..protocol.deliveries import release_call
from ..protocol.plan import Command
from ..protocol.replies import text
from ..redis_io.runner import RETRYABLE, call_with_retry

if TYPE_CHECKING:
    from .delivery import Delivery
    from .upkeep_host import ReadingHost as Worker

log = logging.getLogger("streamdelay.worker")
_handing_back: set[asyncio.Task[None]] = set()


async def refresh(worker: Worker) -> None:
    """Read the paused topics into ``worker.paused`` (one HGETALL)."""
    reply = await worker.client.hgetall(paused_key(worker.config.name))
    _apply(worker, reply)


async def load(worker: Worker) -> None:
    """The first read, before the worker reads any job: retried for up to ``START_PATIENCE``
    seconds, so a paused topic stays paused across restarts (then the watch takes over)."""
    step = Command(("HGETALL", paused_key(worker.config.name)))
    try:
        _apply(worker, await call_with_retry(worker.client, step, START_PATIENCE,
                                             "reading the paused topics"))
    except StreamdelayError as exc:
        log.warning("could not read the paused topics (%s); the watch retries every %gs",
                    exc, REFRESH_S)


def _apply(worker: Worker, reply: Any) -> None:
    paused = frozenset(parse_paused(reply))
    if paused != worker.paused:
        log.info("paused topics: %s", ", ".join(sorted(paused)) or "none")
    worker.paused = paused


async def watch(worker: Worker) -> None:
    """Re-read the paused topics every ``REFRESH_S`` until the worker stops."""
    while not worker.stopping:
        try:
            await refresh(worker)
        except RETRYABLE as exc:  # the read loops ride the outage out too
            log.debug("could not read the paused topics (%s)", exc)
        await asyncio.sleep(REFRESH_S)


def hand_back(worker: Worker, delivery: Delivery, fields: dict[Any, Any] | None) -> None:
    """Give an entry of a paused topic back to its stream (not an attempt), in the background."""
    raw = (fields or {}).get(b"id")
    if raw is None:  # not a job entry: the worker's normal path dead-letters it after resume
        return
    task = asyncio.ensure_future(_release(worker, delivery, text(raw)))
    _handing_back.add(task)
    task.add_done_callback(_handing_back.discard)


async def _release(worker: Worker, delivery: Delivery, job_id: str) -> None:
    keys = worker.partitions[delivery.partition]
    call = release_call(keys, worker.group, [delivery.topic, job_id, delivery.entry_id])
    try:
        released = await worker.call(call, "release")
        worker.counts["released"] += int(released)
    except (OSError, *RETRYABLE) as exc:
        log.warning("could not hand back job %s of paused topic %s (%s); it returns after its "
                    "ttr", job_id, delivery.topic, exc)
