"""Coalescing of concurrent ``AsyncQueue.enqueue`` calls into one ``enqueueJobs`` round.

Each partition has a *lane*. A call whose lane is idle is sent at once (no timer, no added
latency). While a round is in flight, further calls of that partition wait in the lane; when it
returns, everything waiting goes out as the next round: ``enqueueJobs`` calls bounded by count
and bytes, several in one pipeline, in arrival order (so two calls with one id behave as they
would one after the other). Every caller gets its own result or its own error: that of the
call its job rode in.

Only the coordination is here, and it is async only: validation, packing and reply parsing are
the shared sans-I/O core (``enqueuing.py``), the I/O and retry policy are ``runner.py``'s.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import enqueuing, validation
from .config import QueueConfig
from .enqueuing import PreparedJob
from .errors import ConnectionFailed
from .models import EnqueueResult
from .runner import Command, EachCall, call_with_retry
from .topology import AsyncClient, agree_partitions_async

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


def _settle_chunk(waiters: list[tuple[PreparedJob, asyncio.Future[EnqueueResult]]],
                  jobs: list[PreparedJob], chunk: enqueuing.EnqueueChunk, outcome: Any
                  ) -> list[int]:
    """Settle the callers of one call; returns those that go again (the other jobs of a
    call that refused one job's past ``at`` and so wrote nothing)."""
    if not isinstance(outcome, Exception):
        for index, result in enqueuing.enqueue_results(jobs, chunk, outcome):
            _settle(waiters[index][1], result)
        return []
    refused = enqueuing.refused_job(jobs, chunk.owners, outcome)
    if refused is None:  # the call wrote nothing: each of its callers gets the error
        for index in chunk.owners:
            _settle(waiters[index][1], _own(outcome, len(chunk.owners) > 1))
        return []
    _settle(waiters[refused][1], outcome)
    return [index for index in chunk.owners if index != refused]


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

    async def _send(self, client: AsyncClient, chunks: list[enqueuing.EnqueueChunk]
                    ) -> list[Any]:
        """Each call's reply or error; connection trouble (after the retries) is raised."""
        cfg = self.config
        if len(chunks) > 1:
            step = EachCall(tuple(chunk.call for chunk in chunks))
            replies: list[Any] = await call_with_retry(client, step, cfg.retry_for, _WHAT)
            return replies
        try:
            return [await call_with_retry(client, chunks[0].call, cfg.retry_for, _WHAT)]
        except ConnectionFailed:
            raise
        except Exception as exc:
            return [exc]

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
                split = enqueuing.split_jobs(jobs, live)
                if (tolerance == base and len(split) > 1
                        and any(enqueuing.is_absolute(jobs[i]) for i in live)):
                    # several calls are not atomic together: refuse a past `at` first (as
                    # enqueue_many does), then send the rest with a widened tolerance
                    now = await call_with_retry(client, Command(("TIME",)), cfg.retry_for, _WHAT)
                    for index in enqueuing.past_due(jobs, live, now, tolerance):
                        _settle(waiters[index][1], enqueuing.at_in_past(jobs[index]))
                        live.remove(index)
                    tolerance += enqueuing.PAST_CHECK_SLACK_MS
                    continue
                chunks = enqueuing.enqueue_chunks(cfg, jobs, tolerance, split)
                outcomes = await self._send(client, chunks)
                live = []
                for chunk, outcome in zip(chunks, outcomes, strict=True):
                    live.extend(_settle_chunk(waiters, jobs, chunk, outcome))
                live.sort()  # arrival order
        except Exception as exc:  # connection given up, a server error: every caller left
            for index in live:
                _settle(waiters[index][1], _own(exc, len(live) > 1))
