"""A worker's limited topics (docs/limits.md): which topics have a limit (read when the worker
starts and every ``REFRESH_S`` seconds after), and the take loop of each (partition, topic).

A topic without a limit stays on the plain read loop (``reading.py``: one blocking XREADGROUP
for every topic). A limited topic is read only through the shared take
(``consume/core/taking.py``, as a reserve round takes it): no more entries than the limit lets start
now, so jobs over the limit stay in their stream and no attempt is spent. When it gives fewer
than the free slots, the loop starts those and waits as the take's reply says. The take and the
wait are the consumer core's (``take_now``, ``take_wait``), a reserve round's too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from ..base.errors import GroupNotFound, StreamdelayError
from ..io.clients import async_client
from ..io.loop_supervision import pause_after_failure
from ..io.runner import RETRYABLE, call_with_retry, drive_once_async
from ..limits.limit_plans import parse_limits
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Commands
from . import settle_calls as settling
from .core.constants import REFRESH_S, START_PATIENCE
from .core.consumer_core import take_now, take_wait
from .core.routing import TAKES
from .core.staging import parse_staged, staged_command
from .core.taking import Views, limits_command
from .upkeep_host import ReadingHost

log = logging.getLogger("streamdelay.worker")


def _look(queue: str) -> Commands:
    """The limits and the staged topics (docs/priorities.md): one round trip."""
    return Commands((limits_command(queue), staged_command(queue)))


async def refresh(worker: ReadingHost) -> None:
    """Read which topics have a limit, and which are staged, into ``worker.views``."""
    _apply(worker, await worker.call(_look(worker.config.name), "limits"))


def _apply(worker: ReadingHost, replies: list[object]) -> None:
    found = Views(worker.views.paused, parse_limits(replies[0]))
    limited = found.limited
    staged = parse_staged(replies[1]) & frozenset(worker.topics)
    if worker.views.set_limited(limited):
        log.info("limited topics: %s", ", ".join(
            f"{t} ({found.limits[t]})" for t in sorted(limited)) or "none")
    if worker.views.set_staged(staged):
        log.info("staged topics (priorities, fairness keys): %s", ", ".join(sorted(staged)))


async def load(worker: ReadingHost) -> None:
    """The first read, before the worker reads any job: retried for up to ``START_PATIENCE``
    seconds, so a limited topic is never read past its limit after a restart."""
    try:
        _apply(worker, await call_with_retry(worker.client, _look(worker.config.name),
                                             START_PATIENCE, "reading the limited topics"))
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


async def take_loop(worker: ReadingHost, keys: PartitionKeys, topic: str) -> None:
    """Take entries of ``topic`` on ``keys``' partition through its take, while it has one
    (the core's ``take_now``: a staged topic through ``takeStaged``, a limited one through
    ``takeLimited``), waiting after each as its reply says (``take_wait``)."""
    blocking = async_client(worker.config.url, worker.block + worker.config.socket_timeout)
    failures = 0
    block_ms = int(worker.block * 1000)
    try:
        while not worker.stopping:
            views = worker.views
            found = views.of(topic)  # the core's rule (consume/core/routing.py)
            if found not in TAKES:  # plain (the read loop's) or paused: nothing to take
                views.changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(views.changed.wait(), REFRESH_S)
                continue
            wanted = worker.free_slots()
            if wanted <= 0:
                await worker.slot_freed()
                continue
            try:  # the core's take of this route (consume/core/consumer_core.py)
                took = await worker.run_plan(take_now(
                    found, keys, worker.group, worker.consumer, topic, wanted,
                    topic in views.limited), "take")
                failures = 0
            except GroupNotFound:
                await worker.register()
                continue
            entries = took.entries
            worker.leases.add((e.partition, e.topic, e.entry_id) for e in entries if e.leased)
            run, back = worker.core.sort(entries, taken=True)  # paused meanwhile: back
            settling.hand_back(worker, back)
            worker.start_entries(run)
            try:  # never longer than the block time: a stop or a loosened limit is seen
                rest_s = await drive_once_async(blocking, take_wait(found, [keys], topic, took,
                                                                    block_ms))
            except RETRYABLE as exc:
                failures += 1
                await pause_after_failure(failures, "take", exc)
                continue
            except StreamdelayError as exc:
                log.debug("could not wait for new entries of %s (%s)", topic, exc)
                rest_s = worker.block
            if rest_s:
                await asyncio.sleep(rest_s)
    finally:
        await blocking.aclose()
