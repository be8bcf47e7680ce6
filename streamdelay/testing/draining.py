"""``drain``: run every job of a worker's topics now, in the test's process, and say how each run
ended (docs/testing.md#drain).

The server's clock cannot be moved, so "fast forward" moves the jobs instead: the worker runs
(with its dispatcher) until none of its topics has a job ready or running; then, with the
worker stopped, every delayed job of its topics (a job enqueued with a delay, a retry waiting
for its backoff) is rescheduled to now through ``AsyncQueue.reschedule`` (one
``rescheduleJob`` call per job, the operator's own command), in due order; and the worker
runs again, until a round finds nothing delayed and nothing of its topics is left delayed,
ready or reserved (a job promoted just before a round's worker stopped). A stopped worker and
dispatcher cannot race a reschedule: the jobs moved are only ever delayed ones.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..base.errors import StreamdelayError
from ..base.models import Drop, Job
from ..client.queue import AsyncQueue
from ..consume.delivery import Handler
from ..consume.upkeep_loops import idle_watch
from ..consume.worker import Worker

RunState = Literal["succeeded", "retried", "dead", "dropped"]
ROUND_BLOCK_S = 0.1  # the drain's worker reads block this long: a round stops within it
PAGE = 500  # delayed jobs listed per call
ORDER_SPAN_MS = 1000  # moved jobs are due 0, 1, 2 ... ms from now (in due order), 1 s at most


class DrainError(StreamdelayError):
    """``drain`` did not finish: its ``timeout`` ran out, or jobs were still delayed after
    ``max_rounds`` rounds (a handler that enqueues a delayed job every time it runs)."""


@dataclass(frozen=True)
class Outcome:
    """How one handler run of a drain ended: ``succeeded`` (``value``: what it returned),
    ``retried`` (it failed or raised ``sd.Retry``, attempts were left), ``dead`` (it failed on
    its last attempt) or ``dropped`` (it raised ``sd.Drop``); ``error`` the exception."""

    id: str
    topic: str
    attempt: int
    state: RunState
    body: Any
    value: Any = None
    error: BaseException | None = None


def _ended(job: Job, exc: BaseException | None, value: Any) -> Outcome:
    """The outcome of a run of ``job`` that raised ``exc`` (None: returned ``value``), as the
    worker settles it (consume/delivery.py, ``outcome_of``)."""
    if exc is None:
        state: RunState = "succeeded"
    elif isinstance(exc, Drop):
        state = "dropped"
    else:
        state = "dead" if job.attempt >= job.max_attempts else "retried"
    return Outcome(job.id, job.topic, job.attempt, state, job.body, value, exc)


def _recorded(handler: Handler, outcomes: list[Outcome]) -> Handler:
    """``handler`` whose every run appends its outcome to ``outcomes`` (threads append too: a
    list append is atomic)."""
    fn: Callable[[Job], Any] = handler.fn
    if handler.is_async:
        async def run_async(job: Job) -> Any:
            try:
                value = await fn(job)
            except BaseException as exc:
                outcomes.append(_ended(job, exc, None))
                raise
            outcomes.append(_ended(job, None, value))
            return value

        return Handler(run_async, handler.body_type, True)

    def run(job: Job) -> Any:
        try:
            value = fn(job)
        except BaseException as exc:
            outcomes.append(_ended(job, exc, None))
            raise
        outcomes.append(_ended(job, None, value))
        return value

    return Handler(run, handler.body_type, False)


async def _delayed_ids(queue: AsyncQueue, topics: list[str]) -> list[str]:
    """The delayed jobs of ``topics``, in due order."""
    found: list[tuple[int, str]] = []
    for topic in topics:
        cursor: str | None = None
        while True:
            page = await queue.jobs("delayed", topic=topic, limit=PAGE, cursor=cursor)
            found.extend((job.due, job.id) for job in page.jobs)
            cursor = page.cursor
            if cursor is None:
                break
    return [job_id for _, job_id in sorted(found)]


async def forward_delayed(queue: AsyncQueue, topics: list[str]) -> int:
    """Reschedule every delayed job of ``topics`` to now (the n-th in due order n ms from now,
    at most ``ORDER_SPAN_MS``: they run in their order); how many moved."""
    moved = 0
    for index, job_id in enumerate(await _delayed_ids(queue, topics)):
        if await queue.reschedule(job_id, delay=min(index, ORDER_SPAN_MS) / 1000):
            moved += 1
    return moved


async def _left(queue: AsyncQueue, topics: list[str]) -> int:
    """How many jobs of ``topics`` are delayed, ready (in a stream or a staged topic's lanes)
    or reserved."""
    counts = (await queue.stats()).topics
    return sum(found.delayed + found.ready + found.reserved
               for topic in topics if (found := counts.get(topic)) is not None)


async def _serve_round(runner: Worker, until_idle: bool, deadline: float) -> None:
    """Serve until the runner's topics have nothing ready or running (``until_idle``: nothing
    delayed either), within ``deadline`` (monotonic)."""
    serving = asyncio.ensure_future(runner.serve(until_idle=until_idle))
    watching = (None if until_idle
                else asyncio.ensure_future(idle_watch(runner, count_delayed=False)))
    waited = [serving] if watching is None else [serving, watching]
    try:
        await asyncio.wait(waited, timeout=max(0.0, deadline - time.monotonic()),
                           return_when=asyncio.FIRST_COMPLETED)
        if watching is not None and watching.done() and not serving.done():
            watching.result()  # the watch failed: raise its error (after the finally)
            await serving  # the watch stopped the worker
        if not serving.done():
            runner.stop()
            await serving
            raise DrainError("drain: the jobs did not finish within its timeout")
        serving.result()
    finally:
        for task in waited:
            if not task.done():
                task.cancel()
        await asyncio.gather(*waited, return_exceptions=True)


async def drain_async(worker: Worker, *, fast_forward: bool = True, timeout: float = 60.0,
                      max_rounds: int = 100) -> list[Outcome]:
    """``drain`` inside a running event loop (an async test): ``await drain_async(worker)``."""
    deadline = time.monotonic() + timeout
    outcomes: list[Outcome] = []
    cfg = worker.config
    queue = AsyncQueue(cfg.name, url=cfg.url, partitions=cfg.partitions)
    try:
        for _ in range(max_rounds):
            # a fresh worker per round (same handlers, group and name), with its dispatcher,
            # short reads, and no metrics port of its own
            runner = worker.replace(dispatch=True, block=ROUND_BLOCK_S, metrics_port=None)
            runner.handlers = {topic: _recorded(handler, outcomes)
                               for topic, handler in worker.handlers.items()}
            await _serve_round(runner, not fast_forward, deadline)
            if fast_forward and await forward_delayed(queue, runner.topics):
                continue
            # "forward moved nothing" is not "done": the dispatcher may have promoted a job
            # after the round's last idle check and before the worker stopped, so it waits in
            # its stream; only a look at every count ends the drain (docs/testing.md#drain)
            if not await _left(queue, runner.topics):
                return outcomes
        raise DrainError(f"drain: jobs of {', '.join(worker.topics)} were still delayed or "
                         f"ready after {max_rounds} rounds (does a handler enqueue a delayed "
                         "job each time?)")
    finally:
        await queue.close()


def drain(worker: Worker, *, fast_forward: bool = True, timeout: float = 60.0,
          max_rounds: int = 100) -> list[Outcome]:
    """Run every job of ``worker``'s topics now, in this process, and return how each handler
    run ended (``Outcome``), in the order they ended.

    ``fast_forward=True``: delayed jobs and retries waiting for their backoff are moved to now
    between rounds (docs/testing.md#drain), so ``delay=3600`` runs at once; ``False``: they run
    at their due time (``worker.run(until_idle=True)``). Raises ``DrainError`` past ``timeout``
    seconds or ``max_rounds`` rounds. From an async test: ``await drain_async(worker)``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(drain_async(worker, fast_forward=fast_forward, timeout=timeout,
                                       max_rounds=max_rounds))
    raise DrainError("drain: an event loop runs in this thread; use "
                     "await streamdelay.testing.drain_async(worker)")
