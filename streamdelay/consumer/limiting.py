"""A worker's limited topics (docs/limits.md): which topics have a limit (read when the worker
starts and every ``REFRESH_S`` seconds after), and the take loop of each (partition, topic).

A topic without a limit stays on the plain read loop (``reading.py``: one blocking XREADGROUP
for every topic). A limited topic is read only through ``takeLimited`` (``limits/plans.py``):
the script hands out no more entries than the limit lets start now, so jobs over the limit stay
in their stream and no attempt is spent. When it gives fewer than the free slots, its reply
says why and the loop waits exactly that long: for the next token (rate), for a freed lease
(concurrency: BLPOP on the topic's ``limitwake`` list, at most until the earliest lease
expires), or for a new entry (XREAD BLOCK from the group's last delivered id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from redis.exceptions import ResponseError

from ..base.errors import GroupNotFound, StreamdelayError
from ..engine.constants import REFRESH_S, START_PATIENCE
from ..limits.plans import (
    CONCURRENCY,
    DRAINED,
    RATE,
    limits_key,
    parse_limits,
    parse_take,
    take_call,
)
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command
from ..protocol.replies import text
from ..redis_io.runner import RETRYABLE, call_with_retry
from ..redis_io.topology import async_client
from . import pausing
from .delivery import Delivery
from .supervise import pause_after_failure
from .upkeep_host import ReadingHost

log = logging.getLogger("streamdelay.worker")


async def refresh(worker: ReadingHost) -> None:
    """Read which topics have a limit into ``worker.limited`` (one HGETALL)."""
    _apply(worker, await worker.client.hgetall(limits_key(worker.config.name)))


def _apply(worker: ReadingHost, reply: Any) -> None:
    limits = parse_limits(reply)
    limited = frozenset(t for t, limit in limits.items() if limit.rate or limit.concurrency)
    if limited != worker.limited:
        log.info("limited topics: %s", ", ".join(
            f"{t} ({limits[t]})" for t in sorted(limited)) or "none")
        worker.limited = limited
        worker.limits_changed.set()


async def load(worker: ReadingHost) -> None:
    """The first read, before the worker reads any job: retried for up to ``START_PATIENCE``
    seconds, so a limited topic is never read past its limit after a restart."""
    step = Command(("HGETALL", limits_key(worker.config.name)))
    try:
        _apply(worker, await call_with_retry(worker.client, step, START_PATIENCE,
                                             "reading the limited topics"))
    except StreamdelayError as exc:
        log.warning("could not read the limited topics (%s); the watch retries every %gs",
                    exc, REFRESH_S)


async def watch(worker: ReadingHost) -> None:
    """Re-read the limited topics every ``REFRESH_S`` until the worker stops."""
    while not worker.stopping:
        try:
            await refresh(worker)
        except RETRYABLE as exc:
            log.debug("could not read the limited topics (%s)", exc)
        await asyncio.sleep(REFRESH_S)


def plain_read(worker: ReadingHost, partition: int, reply: list[Any]) -> list[Any]:
    """An XREADGROUP reply of the plain read loop without the entries of topics that became
    limited while the read waited: those are handed straight back to their streams (not an
    attempt, as for a paused topic) for the take loop to take under the limit."""
    if not worker.limited:
        return reply
    kept = []
    for stream, entries in reply:
        topic = text(stream).split(":t:", 1)[1]
        if topic not in worker.limited:
            kept.append((stream, entries))
            continue
        for entry_id, fields in entries:
            pausing.hand_back(worker, Delivery(partition, topic, text(entry_id)), fields)
    return kept


async def take_loop(worker: ReadingHost, keys: PartitionKeys, topic: str) -> None:
    """Take entries of ``topic`` on ``keys``' partition through its limit, while it has one."""
    blocking = async_client(worker.config.url, worker.block + worker.config.socket_timeout)
    failures = 0
    try:
        while not worker.stopping:
            if topic not in worker.limited or topic in worker.paused:
                worker.limits_changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(worker.limits_changed.wait(), REFRESH_S)
                continue
            wanted = worker.free_slots()
            if wanted <= 0:
                await worker.slot_freed()
                continue
            try:
                reply = parse_take(await worker.call(
                    take_call(keys, worker.group, worker.consumer, topic, wanted), "take"))
                failures = 0
            except GroupNotFound:
                await worker.register()
                continue
            if reply.entries:
                worker.start_entries(keys.partition, [(keys.stream(topic), reply.entries)])
            try:
                await _wait(worker, blocking, keys, topic, reply.reason, reply.wait_ms,
                            reply.last_id)
            except RETRYABLE as exc:
                failures += 1
                await pause_after_failure(failures, "take", exc)
    finally:
        await blocking.aclose()


async def _wait(worker: ReadingHost, blocking: Any, keys: PartitionKeys, topic: str,
                reason: int, wait_ms: int, last_id: str) -> None:
    """Wait as the take's reply says (nothing when it got all it wanted); never longer than
    the block time, so a stop or a loosened limit is seen within it."""
    block_ms = int(worker.block * 1000)
    if reason == RATE:
        await asyncio.sleep(min(wait_ms, block_ms) / 1000.0)
    elif reason == CONCURRENCY:
        await blocking.blpop([keys.limit_wake(topic)], min(wait_ms, block_ms) / 1000.0)
    elif reason == DRAINED:
        try:  # returns at once when an entry came after the take; else at the next XADD
            await blocking.xread({keys.stream(topic): last_id or "$"}, count=1, block=block_ms)
        except ResponseError as exc:
            log.debug("could not wait for new entries of %s (%s)", topic, exc)
            await asyncio.sleep(worker.block)
