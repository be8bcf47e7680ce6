"""Send script calls to Redis: EVALSHA with NOSCRIPT reload, error mapping, one retry policy.

Operations are written once as generator *plans* (``protocol/plan.py``) that yield steps and
receive replies; ``drive_sync`` and ``drive_async`` are the only two places that do I/O for them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, TypeVar

import redis
import tenacity
from redis.exceptions import AuthenticationError, NoScriptError, ResponseError

from ..base.errors import StreamdelayError
from ..protocol.durability import Durability, is_durable
from ..protocol.plan import Command, Commands, EachCall, Plan, Step
from ..protocol.scripts import Script, ScriptCall
from .calls import (
    RETRYABLE,
    auth_failed,
    call_outcomes,
    command,
    command_error,
    eval_args,
    evalsha_args,
    first_error,
    gave_up,
    map_error,
    old_server,
    retryable,
    send,
)
from .lane import MISSED, Lane
from .topology import AsyncClient, SyncClient, is_cluster, plain_pool
from .waiting import run_durable_async, run_durable_sync

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

def _load_sync(client: SyncClient, script: Script) -> None:
    """SCRIPT LOAD on the server, or on every primary of a cluster (redis-py routes it so)."""
    try:
        client.script_load(script.source)
    except ResponseError as exc:
        raise old_server(exc) from exc


def _run_script_sync(client: SyncClient, call: ScriptCall) -> Any:
    try:
        return command(client)(*evalsha_args(call))
    except NoScriptError:
        _load_sync(client, call.script)
        try:
            try:
                return command(client)(*evalsha_args(call))
            except NoScriptError:  # flushed again between the load and the call
                return command(client)(*eval_args(call))
        except ResponseError as exc:
            raise map_error(call, exc) from exc
    except ResponseError as exc:
        raise map_error(call, exc) from exc


def _run_calls_one_by_one_sync(client: SyncClient, calls: list[ScriptCall]) -> list[Any]:
    """Cluster pipelines refuse EVALSHA: send each bounded call on its own, in order."""
    replies: list[Any] = []
    for call in calls:
        try:
            replies.append(_run_script_sync(client, call))
        except StreamdelayError as exc:  # like a pipeline: the other calls still run
            replies.append(exc)
    return replies


def _send_each_sync(pool: redis.ConnectionPool, calls: list[ScriptCall]) -> list[Any]:
    """The replies (error replies in their place) of ``calls`` sent as one pipeline on a
    connection of the client's pool, each call as soon as it is packed: Redis runs the first
    while the next ones are packed (a redis-py pipeline packs them all before sending any).
    Connection trouble drops the connection and is raised (the caller's retry policy)."""
    conn: Any = pool.get_connection()  # redis-py connections are untyped upstream
    try:
        health = True  # checked once, before the first call (as a pipeline does)
        for call in calls:
            conn.send_packed_command(conn.pack_command(*evalsha_args(call)), check_health=health)
            health = False
        replies: list[Any] = []
        for _ in calls:
            try:
                replies.append(conn.read_response())
            except ResponseError as exc:
                replies.append(exc)
        return replies
    except BaseException:  # half-read behind: the connection cannot be used again
        conn.disconnect()
        raise
    finally:
        pool.release(conn)


def _run_pipeline_sync(client: SyncClient, calls: list[ScriptCall]) -> list[Any]:
    """The outcome of each call (see ``call_outcomes``), sent as one pipeline."""
    if is_cluster(client):
        return call_outcomes(calls, _run_calls_one_by_one_sync(client, calls))
    pool = getattr(client, "connection_pool", None)
    if plain_pool(pool):  # a plain client's pool (not Sentinel's)
        replies = _send_each_sync(pool, calls)
    else:
        pipe = client.pipeline(transaction=False)
        for call in calls:
            command(pipe)(*evalsha_args(call))
        replies = pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):  # NOSCRIPT: the call did not run; load, run it again
        if isinstance(reply, NoScriptError):
            try:
                replies[i] = _run_script_sync(client, calls[i])
            except StreamdelayError as exc:
                replies[i] = exc
    return call_outcomes(calls, replies)


def _command_replies(step: Commands, replies: list[Any]) -> list[Any]:
    """The replies of a ``Commands`` step; connection trouble, then the first error, raised."""
    for reply in replies:
        if isinstance(reply, RETRYABLE):
            raise reply
    for command_step, reply in zip(step.commands, replies, strict=True):
        if isinstance(reply, ResponseError):
            raise command_error(command_step, reply)
    return replies


def _run_commands_sync(client: SyncClient, step: Commands) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for each in step.commands:
        send(pipe, each)
    return _command_replies(step, pipe.execute(raise_on_error=False))


def run_step_sync(client: SyncClient, step: Step, durability: Durability | None = None) -> Any:
    """Execute one step on a synchronous client (no retry); a durable step under
    ``durability`` is followed by ``WAIT`` in the same pipeline (``waiting.py``)."""
    if durability is not None and is_durable(step):
        return run_durable_sync(client, step, durability)
    if isinstance(step, ScriptCall):
        return _run_script_sync(client, step)
    if isinstance(step, Command):
        try:
            return send(client, step)
        except ResponseError as exc:
            raise command_error(step, exc) from exc
    if isinstance(step, Commands):
        return _run_commands_sync(client, step)
    if isinstance(step, EachCall):
        return _run_pipeline_sync(client, list(step.calls))
    return first_error(_run_pipeline_sync(client, step))


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

async def _run_script_async(client: AsyncClient, call: ScriptCall) -> Any:
    try:
        return await command(client)(*evalsha_args(call))
    except NoScriptError:
        try:
            await client.script_load(call.script.source)  # a cluster loads it on every primary
        except ResponseError as exc:
            raise old_server(exc) from exc
        try:
            try:
                return await command(client)(*evalsha_args(call))
            except NoScriptError:  # flushed again between the load and the call
                return await command(client)(*eval_args(call))
        except ResponseError as exc:
            raise map_error(call, exc) from exc
    except ResponseError as exc:
        raise map_error(call, exc) from exc


async def _run_calls_by_partition_async(client: AsyncClient, calls: list[ScriptCall]
                                        ) -> list[Any]:
    """Cluster pipelines refuse EVALSHA: the calls of each partition (same keys) are sent one
    after the other, in order (a later call of a partition must not overtake an earlier one),
    and the partitions concurrently. Replies (or errors) in the order of ``calls``."""
    replies: list[Any] = [None] * len(calls)
    by_keys: dict[tuple[str, ...], list[int]] = {}
    for index, call in enumerate(calls):
        by_keys.setdefault(tuple(call.keys), []).append(index)

    async def in_order(indexes: list[int]) -> None:
        for index in indexes:
            try:
                replies[index] = await _run_script_async(client, calls[index])
            except Exception as exc:  # like a pipeline: the other calls still run
                replies[index] = exc

    await asyncio.gather(*(in_order(indexes) for indexes in by_keys.values()))
    return replies


async def _run_pipeline_async(client: AsyncClient, calls: list[ScriptCall]) -> list[Any]:
    """The outcome of each call (see ``call_outcomes``), sent as one pipeline."""
    if is_cluster(client):
        return call_outcomes(calls, await _run_calls_by_partition_async(client, calls))
    pipe = client.pipeline(transaction=False)
    for call in calls:
        command(pipe)(*evalsha_args(call))
    replies: list[Any] = await pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
            try:
                replies[i] = await _run_script_async(client, calls[i])
            except StreamdelayError as exc:
                replies[i] = exc
    return call_outcomes(calls, replies)


async def _run_commands_async(client: AsyncClient, step: Commands) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for each in step.commands:
        send(pipe, each)
    return _command_replies(step, await pipe.execute(raise_on_error=False))


async def run_step_async(client: AsyncClient, step: Step,
                         durability: Durability | None = None) -> Any:
    """Execute one step on an asyncio client (no retry); see ``run_step_sync``."""
    if durability is not None and is_durable(step):
        return await run_durable_async(client, step, durability)
    if isinstance(step, ScriptCall):
        return await _run_script_async(client, step)
    if isinstance(step, Command):
        try:
            return await send(client, step)
        except ResponseError as exc:
            raise command_error(step, exc) from exc
    if isinstance(step, Commands):
        return await _run_commands_async(client, step)
    if isinstance(step, EachCall):
        return await _run_pipeline_async(client, list(step.calls))
    return first_error(await _run_pipeline_async(client, step))


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
    "run_step_async",
    "run_step_sync",
    "run_with_retry_async",
    "run_with_retry_sync",
]
