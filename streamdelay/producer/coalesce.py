"""Coalescing of concurrent ``AsyncQueue.enqueue`` calls into one ``enqueueJobs`` round.

Each partition has a *lane*. A call whose lane is idle is sent at once (no timer, no added
latency). While a round is in flight, further calls of that partition wait in the lane; when it
returns, everything waiting goes out as the next round: ``enqueueJobs`` calls of at most
``ENQUEUE_BATCH`` jobs, several in one pipeline, in arrival order (so two calls with one id
behave as they would one after the other). Every caller gets its own result or its own error.

Only the coordination is here, and it is async only: validation, packing and reply parsing are
the shared sans-I/O core (``enqueuing.py``), the I/O and retry policy are ``runner.py``'s.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from ..base import validation
from ..base.models import EnqueueResult
from ..protocol.plan import Command
from ..redis_io.agreement import agree_partitions_async
from ..redis_io.config import QueueConfig
from ..redis_io.runner import call_with_retry
from ..redis_io.topology import AsyncClient
from . import enqueuing
from .enqueuing import PreparedJob

_WHAT = "enqueue"


@dataclass(eq=False)
class _Lane:
    """The calls of one partition waiting for the next round, and the task sending the rounds."""

    waiting: list[tuple[PreparedJob, asyncio.Future[EnqueueResult]]] = field(
        default_factory=list)
    task: asyncio.Task[None] | None = None


def _own(error: Exception, shared: bool) -> Exception:
    """``error`` for one caller: a copy when several callers get it (one exception object raised
    in many tasks would gather all their tracebacks), chained to the original."""
    if not shared:
        return error
    try:
        mine = copy.copy(error)
    except Exception:  # an exception type that cannot be rebuilt from its args
        return error
    mine.__cause__ = error.__cause__ or error
    return mine


def _settle(future: asyncio.Future[EnqueueResult], outcome: EnqueueResult | Exception) -> None:
    """Hand one caller its outcome, unless it stopped waiting (cancelled)."""
    if future.done():
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class EnqueueCoalescer:
    """Sends the enqueue calls of one ``AsyncQueue``, a round per partition at a time."""

    def __init__(self, config: QueueConfig, client: Callable[[], AsyncClient]) -> None:
        self.config = config
        self._client = client  # the queue's client, created on first use
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lanes: dict[int, _Lane] = {}

    async def enqueue(self, job: PreparedJob) -> EnqueueResult:
        """Enqueue one validated job with the next round of its partition; its result.

        Cancelling the caller before its round is sent leaves the job out; once the round is
        sent the job may be enqueued all the same (as with a cancelled single call).
        """
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # lanes (futures, tasks) belong to one event loop
            self._loop, self._lanes = loop, {}
        lane = self._lanes.get(job.partition)
        if lane is None:
            lane = self._lanes[job.partition] = _Lane()
        future: asyncio.Future[EnqueueResult] = loop.create_future()
        lane.waiting.append((job, future))
        if lane.task is None:
            lane.task = loop.create_task(self._drain(lane))
        return await future

    async def wait_idle(self) -> None:
        """Wait until every round in flight or waiting (on this event loop) has been answered."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        while loop is self._loop:
            tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _drain(self, lane: _Lane) -> None:
        """Send rounds until the lane is empty; a cancelled drain cancels its callers."""
        sending: list[tuple[PreparedJob, asyncio.Future[EnqueueResult]]] = []
        try:
            while lane.waiting:
                sending = [w for w in lane.waiting if not w[1].done()]  # drop cancelled callers
                lane.waiting = []
                if sending:
                    await self._round(sending)
                sending = []
        finally:  # no await between the last look at ``waiting`` and this
            lane.task = None
            for _, future in (*sending, *lane.waiting):
                future.cancel()
            lane.waiting = []

    async def _round(self, waiters: list[tuple[PreparedJob, asyncio.Future[EnqueueResult]]]
                     ) -> None:
        """One round: every waiter is settled with its result or an error; nothing escapes."""
        cfg = self.config
        jobs = [job for job, _ in waiters]
        live = list(range(len(jobs)))  # the jobs not settled yet
        base = tolerance = validation.delay_ms(cfg.past_tolerance)
        try:
            client = self._client()
            await agree_partitions_async(client, cfg.url, cfg.name, cfg.partitions,
                                         cfg.retry_for)
            while live:
                if (tolerance == base and enqueuing.call_count(jobs, live) > 1
                        and any(enqueuing.is_absolute(jobs[i]) for i in live)):
                    # several calls are not atomic together: refuse a past `at` first (as
                    # enqueue_many does), then send the rest with a widened tolerance
                    now = await call_with_retry(client, Command(("TIME",)), cfg.retry_for, _WHAT)
                    for index in enqueuing.past_due(jobs, live, now, tolerance):
                        _settle(waiters[index][1], enqueuing.at_in_past(jobs[index]))
                        live.remove(index)
                    tolerance += enqueuing.PAST_CHECK_SLACK_MS
                    continue
                chunks = enqueuing.enqueue_chunks(cfg, jobs, tolerance, live)
                step = chunks[0].call if len(chunks) == 1 else [c.call for c in chunks]
                try:
                    reply = await call_with_retry(client, step, cfg.retry_for, _WHAT)
                except Exception as exc:
                    # one call refused one job's past `at` and wrote nothing: that caller
                    # gets the error, the others go again
                    refused = (enqueuing.refused_job(jobs, live, exc) if len(chunks) == 1
                               else None)
                    if refused is None:
                        raise
                    _settle(waiters[refused][1], exc)
                    live.remove(refused)
                    continue
                replies = [reply] if len(chunks) == 1 else reply
                for chunk, chunk_reply in zip(chunks, replies, strict=True):
                    for index, result in enqueuing.enqueue_results(jobs, chunk, chunk_reply):
                        _settle(waiters[index][1], result)
                live = []
        except Exception as exc:  # connection given up, a server error: every caller left
            for index in live:
                _settle(waiters[index][1], _own(exc, len(live) > 1))
