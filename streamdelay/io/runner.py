"""Drive plans against Redis under one retry policy.

Operations are written once as generator *plans* (``protocol/plan.py``) that yield steps and
receive replies; ``drive_sync`` and ``drive_async`` are the only two places that do I/O for them.
Each step goes out through ``steps.py`` (EVALSHA with NOSCRIPT reload, error mapping); a
connection error sends it again under ``retry_policy``.
"""

from __future__ import annotations

import logging
import time
from typing import Any, TypeVar

import tenacity
from redis.exceptions import AuthenticationError

from ..base.errors import StreamdelayError
from ..protocol.durability import Durability
from ..protocol.plan import Plan, Step
from ..protocol.scripts import ScriptCall
from .calls import RETRYABLE, auth_failed, gave_up, retryable
from .clients import AsyncClient, SyncClient
from .lane import MISSED, Lane
from .steps import run_step_async, run_step_sync

log = logging.getLogger("streamdelay")
T = TypeVar("T")


def retry_policy(give_up_after: float | None, what: str) -> dict[str, Any]:
    """Tenacity settings shared by every Redis call: exponential backoff with jitter, logged."""
    stop = (tenacity.stop_never if give_up_after is None
            else tenacity.stop_after_delay(give_up_after))
    return {
        "retry": tenacity.retry_if_exception(retryable),
        "wait": tenacity.wait_random_exponential(multiplier=0.05, max=2.0),
        "stop": stop,
        "reraise": True,
        "before_sleep": lambda state: log.warning(
            "redis unavailable during %s (attempt %d): %s; retrying",
            what, state.attempt_number, state.outcome.exception() if state.outcome else "?",
        ),
    }


# --- synchronous -------------------------------------------------------------------------

def _left(give_up_after: float | None, began: float) -> float | None:
    """What is left of a give-up budget after a first failed attempt that started at ``began``."""
    return None if give_up_after is None else max(0.0, give_up_after - (time.monotonic() - began))


def run_with_retry_sync(
    client: SyncClient, step: Step, give_up_after: float | None, what: str,
    durability: Durability | None = None,
) -> Any:
    """Run one step; on a connection error, run it again under the shared retry policy.

    The first attempt goes without a tenacity controller: building one costs ~15 µs (~20 µs
    asyncio) per call, a tenth of a single enqueue (benchmarks/micro/enqueue.py).
    """
    began = time.monotonic()
    try:
        try:
            return run_step_sync(client, step, durability)
        except RETRYABLE as exc:
            if not retryable(exc):
                raise
        retrying = tenacity.Retrying(**retry_policy(_left(give_up_after, began), what))
        return retrying(run_step_sync, client, step, durability)
    except AuthenticationError as exc:
        raise auth_failed(exc) from exc


def drive_sync(client: SyncClient, plan: Plan[T], give_up_after: float | None,
               durability: Durability | None = None, lane: Lane | None = None) -> T:
    """Run a plan to its end on a synchronous client, retrying each step on connection errors.

    A step's streamdelay error (a script's refusal) is raised inside the plan, at its ``yield``:
    a plan that expects one (an enqueue round) handles it there, any other lets it through.
    With ``durability`` (a queue's ``replicas=``), each step carrying a ``durable`` call is
    followed by ``WAIT`` in its pipeline and may raise ``NotDurable`` the same way. With a
    ``lane`` (``Queue.enqueue``), a single script call goes on its held connection first
    (``lane.py``); when the lane steps aside it goes the ordinary way.
    """
    try:
        step = next(plan)
        while True:
            try:
                reply = MISSED
                if lane is not None and durability is None and isinstance(step, ScriptCall):
                    reply = lane.call(client, step)
                if reply is MISSED:
                    reply = run_with_retry_sync(client, step, give_up_after,
                                                "a queue operation", durability)
            except StreamdelayError as exc:
                step = plan.throw(exc)
                continue
            step = plan.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except RETRYABLE as exc:
        raise gave_up(exc) from exc


# --- asyncio -----------------------------------------------------------------------------

async def run_with_retry_async(
    client: AsyncClient, step: Step, give_up_after: float | None, what: str,
    durability: Durability | None = None,
) -> Any:
    """Run one step; on a connection error, run it again under the shared retry policy."""
    began = time.monotonic()
    try:
        try:
            return await run_step_async(client, step, durability)
        except RETRYABLE as exc:
            if not retryable(exc):
                raise
        retrying = tenacity.AsyncRetrying(**retry_policy(_left(give_up_after, began), what))
        return await retrying(run_step_async, client, step, durability)
    except AuthenticationError as exc:
        raise auth_failed(exc) from exc


async def drive_async(
    client: AsyncClient, plan: Plan[T], give_up_after: float | None,
    what: str = "a queue operation", durability: Durability | None = None,
) -> T:
    """Run a plan to its end on an asyncio client, retrying each step on connection errors
    (a step's streamdelay error is raised inside the plan, and ``durability`` is applied, as
    ``drive_sync`` does)."""
    try:
        step = next(plan)
        while True:
            try:
                reply: Any = await run_with_retry_async(client, step, give_up_after, what,
                                                        durability)
            except StreamdelayError as exc:
                step = plan.throw(exc)
                continue
            step = plan.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except RETRYABLE as exc:
        raise gave_up(exc) from exc


async def drive_once_async(client: AsyncClient, plan: Plan[T]) -> T:
    """Run a plan on an asyncio client, each step sent once: connection trouble is raised as
    it is, for a loop with its own failure policy (a worker's read and take loops pause and
    read again); a step's streamdelay error is raised inside the plan, as ``drive_async``
    does."""
    try:
        step = next(plan)
        while True:
            try:
                reply: Any = await run_step_async(client, step)
            except StreamdelayError as exc:
                step = plan.throw(exc)
                continue
            step = plan.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def call_with_retry(
    client: AsyncClient, step: Step, give_up_after: float | None, what: str
) -> Any:
    """Run one step under the shared retry policy (used by the worker and dispatcher loops)."""
    try:
        return await run_with_retry_async(client, step, give_up_after, what)
    except RETRYABLE as exc:
        raise gave_up(exc) from exc


__all__ = [
    "RETRYABLE",
    "call_with_retry",
    "drive_async",
    "drive_once_async",
    "drive_sync",
    "retry_policy",
    "run_with_retry_async",
    "run_with_retry_sync",
]
