"""Pausing and resuming topics (docs/operations.md#pause-and-resume).

The paused topics of a queue live in one Redis hash, partition 0's ``paused`` key (topic ->
since when, epoch ms), written by ``setPaused``. Workers read it when they start and every
``REFRESH_S`` seconds after, so a pause reaches every worker within a second with no round trip
per job: their read loops leave paused topics out of XREADGROUP, and an entry of a paused topic
that a read already in flight returns is handed back at once (``releaseJobs``: to the tail of
its stream, not counted as an attempt). Dispatchers are not affected: due jobs still move into
their streams, so ``stats`` shows them ready, with a growing lag.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .. import validation
from ..config import QueueConfig
from ..errors import StreamdelayError
from ..keys import PartitionKeys
from ..runner import RETRYABLE, Command, Plan, call_with_retry
from ..scripts import script

if TYPE_CHECKING:
    from ..delivery import Delivery
    from ..worker import Worker

log = logging.getLogger("streamdelay.worker")
REFRESH_S = 0.5  # how often workers re-read the paused topics (a pause takes effect within 1 s)
START_PATIENCE = 10.0  # seconds a starting worker retries its first read of them
_handing_back: set[asyncio.Task[None]] = set()


def paused_key(queue: str) -> str:
    """The key of a queue's paused topics (partition 0's hash tag)."""
    return PartitionKeys(queue, 0).paused


def set_paused_plan(cfg: QueueConfig, topic: str, paused: bool) -> Plan[bool]:
    """Pause (or resume) ``topic``; True when this call changed its state."""
    name = validation.topic(topic)
    reply = yield script("setPaused").call([paused_key(cfg.name)], [name, 1 if paused else 0])
    return bool(int(reply))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_paused(reply: Any) -> dict[str, int]:
    """An HGETALL reply of the paused hash (a dict or a flat list) as topic -> since (ms)."""
    pairs = (reply.items() if isinstance(reply, dict)
             else zip(reply[::2], reply[1::2], strict=True))
    return {_text(topic): int(since) for topic, since in pairs}


def paused_plan(cfg: QueueConfig) -> Plan[dict[str, int]]:
    """The paused topics of the queue: topic -> paused since (epoch ms, server clock)."""
    return parse_paused((yield Command(("HGETALL", paused_key(cfg.name)))))


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
    task = asyncio.ensure_future(_release(worker, delivery, _text(raw)))
    _handing_back.add(task)
    task.add_done_callback(_handing_back.discard)


async def _release(worker: Worker, delivery: Delivery, job_id: str) -> None:
    keys = worker.partitions[delivery.partition]
    args = [worker.group, delivery.topic, job_id, delivery.entry_id]
    try:
        released = await worker.call(script("releaseJobs").call(keys.script_keys(), args),
                                     "release")
        worker.counts["released"] += int(released)
    except (OSError, *RETRYABLE) as exc:
        log.warning("could not hand back job %s of paused topic %s (%s); it returns after its "
                    "ttr", job_id, delivery.topic, exc)
