"""Coalescing of concurrent ``AsyncQueue.enqueue`` calls into one ``enqueueJobs`` round.

Each partition has a *lane*. A call whose lane is idle is sent at once (no timer, no added
latency). While a round is in flight, further calls of that partition wait in the lane; when it
returns, everything waiting goes out as the next round: ``enqueueJobs`` calls bounded by count
and bytes, several in one pipeline, in arrival order (so two calls with one id behave as they
would one after the other). Every caller gets its own result or its own error: that of the
call its job rode in.

Only the coordination is here, and it is async only: validation, packing and reply parsing are
the shared sans-I/O core (``enqueuing.py``: one round plan for this and ``enqueue_many``),
the I/O and retry policy are ``io/runner.py``'s.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from ..base.models import EnqueueResult
from ..io.agreement import agree_partitions_async
from ..io.clients import AsyncClient
from ..io.config import QueueConfig
from ..io.runner import drive_async
from . import enqueue_one, enqueuing
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
        """One round (``enqueuing.round_plan``, the one ``enqueue_many`` drives too): every
        waiter is settled with its result or an error; nothing escapes."""
        cfg = self.config
        outcomes: list[enqueuing.Outcome | None] = [None] * len(waiters)
        try:
            client = self._client()
            await agree_partitions_async(client, cfg.url, cfg.name, cfg.partitions,
                                         cfg.retry_for, events=cfg.events_bound)
            if len(waiters) == 1:  # a caller alone: the one-job script (docs/keys.md)
                outcomes[0] = await drive_async(client, enqueue_one.prepared_one_plan(
                    cfg, waiters[0][0]), cfg.retry_for, _WHAT, cfg.durability)
            else:
                await drive_async(client, enqueuing.round_plan(
                    cfg, [job for job, _ in waiters], outcomes, isolate=True), cfg.retry_for,
                    _WHAT, cfg.durability)
        except Exception as exc:  # connection given up, a server error: every caller left
            outcomes = [exc if outcome is None else outcome for outcome in outcomes]
        shared: dict[int, int] = {}  # callers per error object (a call's error reaches each)
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                shared[id(outcome)] = shared.get(id(outcome), 0) + 1
        for (_, future), outcome in zip(waiters, outcomes, strict=True):
            if isinstance(outcome, Exception):
                _settle(future, _own(outcome, shared[id(outcome)] > 1))
            elif outcome is not None:  # the plan gives every job an outcome when it ends
                _settle(future, outcome)
