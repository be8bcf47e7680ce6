"""Send script calls to Redis: EVALSHA with NOSCRIPT reload, error mapping, one retry policy.

Operations are written once as generator *plans* (``protocol/plan.py``) that yield steps and
receive replies; ``drive_sync`` and ``drive_async`` are the only two places that do I/O for them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
import tenacity
from redis.exceptions import (
    AuthenticationError,
    ClusterDownError,
    ClusterError,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)

from ..base.errors import (
    ConfigError,
    ConnectionFailed,
    ScriptError,
    StreamdelayError,
)
from ..protocol.plan import Command, EachCall, Plan, Step
from ..protocol.script_errors import error_from_script
from ..protocol.scripts import Script, ScriptCall
from .topology import AsyncClient, SyncClient, is_cluster

log = logging.getLogger("streamdelay")
T = TypeVar("T")
# Connection trouble, and what a cluster or a failover answers while it settles (no slot owner,
# a demoted master, "cannot be connected"): every one of them is ridden out by the retry policy.
RETRYABLE = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError,
             ClusterDownError, ClusterError, TryAgainError, ReadOnlyError, RedisClusterException)


def _retryable(exc: BaseException) -> bool:
    """Connection trouble worth waiting out; a refused password is not (it will not heal)."""
    return isinstance(exc, RETRYABLE) and not isinstance(exc, AuthenticationError)


def _auth_failed(exc: AuthenticationError) -> ConfigError:
    return ConfigError(f"redis: authentication failed: {exc} (check the user and password "
                       f"in the URL)")


def retry_policy(give_up_after: float | None, what: str) -> dict[str, Any]:
    """Tenacity settings shared by every Redis call: exponential backoff with jitter, logged."""
    stop = (tenacity.stop_never if give_up_after is None
            else tenacity.stop_after_delay(give_up_after))
    return {
        "retry": tenacity.retry_if_exception(_retryable),
        "wait": tenacity.wait_random_exponential(multiplier=0.05, max=2.0),
        "stop": stop,
        "reraise": True,
        "before_sleep": lambda state: log.warning(
            "redis unavailable during %s (attempt %d): %s; retrying",
            what, state.attempt_number, state.outcome.exception() if state.outcome else "?",
        ),
    }


def _denied(exc: NoPermissionError) -> ConfigError:
    return ConfigError(f"redis: permission denied: {exc} (the ACL a queue needs: "
                       f"docs/security.md)")


def _command_error(step: Command, exc: ResponseError) -> Exception:
    """A plain command's error reply as a streamdelay error (retryable ones stay as they are)."""
    if isinstance(exc, NoPermissionError):
        return _denied(exc)
    if isinstance(exc, RETRYABLE):
        return exc
    return StreamdelayError(f"redis: {step.args[0]} failed: {exc}")


def _map_error(call: ScriptCall, exc: Exception) -> Exception:
    if isinstance(exc, NoPermissionError):
        return _denied(exc)
    if isinstance(exc, OutOfMemoryError):  # refused whole: a script that may write ran nothing
        return ScriptError(f"redis is full (OOM, maxmemory reached): {call.script.name} was "
                           f"refused and wrote nothing; free memory or raise maxmemory "
                           f"(docs/operations.md)", script=call.script.name)
    if isinstance(exc, ResponseError) and not isinstance(exc, (NoScriptError, *RETRYABLE)):
        return error_from_script(call.script.name, str(exc))
    return exc


def _command(client: Any) -> Callable[..., Any]:
    """redis-py's ``execute_command`` (untyped upstream), typed for our callers."""
    command: Callable[..., Any] = client.execute_command
    return command


def _evalsha_args(call: ScriptCall) -> tuple[Any, ...]:
    return ("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)


def _eval_args(call: ScriptCall) -> tuple[Any, ...]:
    """EVAL with the source: works even when the script cache was just flushed (and fills it)."""
    return ("EVAL", call.script.source, len(call.keys), *call.keys, *call.args)


def _gave_up(exc: Exception) -> ConnectionFailed:
    return ConnectionFailed(f"redis: unreachable ({exc})")


def _outcomes(calls: list[ScriptCall], replies: list[Any]) -> list[Any]:
    """Each call's reply, or its error as a streamdelay error; connection trouble is raised
    (so the whole step is retried)."""
    for reply in replies:
        if isinstance(reply, RETRYABLE):
            raise reply
    return [_map_error(call, reply) if isinstance(reply, Exception) else reply
            for call, reply in zip(calls, replies, strict=True)]


def _first_error(outcomes: list[Any]) -> list[Any]:
    """The replies of a ``list`` step; the first call's error is raised."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes


# --- synchronous -------------------------------------------------------------------------

def _old_server(exc: ResponseError) -> Exception:
    """A script Redis cannot compile: before 7.0 the ``#!lua`` flags line is a syntax error."""
    if "Error compiling script" in str(exc):
        return ConfigError(f"redis: this server cannot load streamdelay's scripts ({exc}); "
                           f"streamdelay needs Redis 7.0 or newer (docs/operations.md)")
    return exc


def _load_sync(client: SyncClient, script: Script) -> None:
    """SCRIPT LOAD on the server, or on every primary of a cluster (redis-py routes it so)."""
    try:
        client.script_load(script.source)
    except ResponseError as exc:
        raise _old_server(exc) from exc


def _run_script_sync(client: SyncClient, call: ScriptCall) -> Any:
    try:
        return _command(client)(*_evalsha_args(call))
    except NoScriptError:
        _load_sync(client, call.script)
        try:
            try:
                return _command(client)(*_evalsha_args(call))
            except NoScriptError:  # flushed again between the load and the call
                return _command(client)(*_eval_args(call))
        except ResponseError as exc:
            raise _map_error(call, exc) from exc
    except ResponseError as exc:
        raise _map_error(call, exc) from exc


def _run_calls_one_by_one_sync(client: SyncClient, calls: list[ScriptCall]) -> list[Any]:
    """Cluster pipelines refuse EVALSHA: send each bounded call on its own, in order."""
    replies: list[Any] = []
    for call in calls:
        try:
            replies.append(_run_script_sync(client, call))
        except StreamdelayError as exc:  # like a pipeline: the other calls still run
            replies.append(exc)
    return replies


def _run_pipeline_sync(client: SyncClient, calls: list[ScriptCall]) -> list[Any]:
    """The outcome of each call (see ``_outcomes``), sent as one pipeline."""
    if is_cluster(client):
        return _outcomes(calls, _run_calls_one_by_one_sync(client, calls))
    pipe = client.pipeline(transaction=False)
    for call in calls:
        _command(pipe)(*_evalsha_args(call))
    replies = pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):  # NOSCRIPT: the call did not run; load, run it again
        if isinstance(reply, NoScriptError):
            try:
                replies[i] = _run_script_sync(client, calls[i])
            except StreamdelayError as exc:
                replies[i] = exc
    return _outcomes(calls, replies)


def run_step_sync(client: SyncClient, step: Step) -> Any:
    """Execute one step on a synchronous client (no retry)."""
    if isinstance(step, ScriptCall):
        return _run_script_sync(client, step)
    if isinstance(step, Command):
        try:
            return _command(client)(*step.args)
        except ResponseError as exc:
            raise _command_error(step, exc) from exc
    if isinstance(step, EachCall):
        return _run_pipeline_sync(client, list(step.calls))
    return _first_error(_run_pipeline_sync(client, step))


def _left(give_up_after: float | None, began: float) -> float | None:
    """What is left of a give-up budget after a first failed attempt that started at ``began``."""
    return None if give_up_after is None else max(0.0, give_up_after - (time.monotonic() - began))


def run_with_retry_sync(
    client: SyncClient, step: Step, give_up_after: float | None, what: str
) -> Any:
    """Run one step; on a connection error, run it again under the shared retry policy.

    The first attempt goes without a tenacity controller: building one costs ~15 µs (~20 µs
    asyncio) per call, a tenth of a single enqueue (benchmarks/enqueue.py).
    """
    began = time.monotonic()
    try:
        try:
            return run_step_sync(client, step)
        except RETRYABLE as exc:
            if not _retryable(exc):
                raise
        retrying = tenacity.Retrying(**retry_policy(_left(give_up_after, began), what))
        return retrying(run_step_sync, client, step)
    except AuthenticationError as exc:
        raise _auth_failed(exc) from exc


def drive_sync(client: SyncClient, plan: Plan[T], give_up_after: float | None) -> T:
    """Run a plan to its end on a synchronous client, retrying each step on connection errors.

    A step's streamdelay error (a script's refusal) is raised inside the plan, at its ``yield``:
    a plan that expects one (an enqueue round) handles it there, any other lets it through.
    """
    try:
        step = next(plan)
        while True:
            try:
                reply = run_with_retry_sync(client, step, give_up_after, "a queue operation")
            except StreamdelayError as exc:
                step = plan.throw(exc)
                continue
            step = plan.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except RETRYABLE as exc:
        raise _gave_up(exc) from exc


# --- asyncio -----------------------------------------------------------------------------

async def _run_script_async(client: AsyncClient, call: ScriptCall) -> Any:
    try:
        return await _command(client)(*_evalsha_args(call))
    except NoScriptError:
        try:
            await client.script_load(call.script.source)  # a cluster loads it on every primary
        except ResponseError as exc:
            raise _old_server(exc) from exc
        try:
            try:
                return await _command(client)(*_evalsha_args(call))
            except NoScriptError:  # flushed again between the load and the call
                return await _command(client)(*_eval_args(call))
        except ResponseError as exc:
            raise _map_error(call, exc) from exc
    except ResponseError as exc:
        raise _map_error(call, exc) from exc


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
    """The outcome of each call (see ``_outcomes``), sent as one pipeline."""
    if is_cluster(client):
        return _outcomes(calls, await _run_calls_by_partition_async(client, calls))
    pipe = client.pipeline(transaction=False)
    for call in calls:
        _command(pipe)(*_evalsha_args(call))
    replies: list[Any] = await pipe.execute(raise_on_error=False)
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
            try:
                replies[i] = await _run_script_async(client, calls[i])
            except StreamdelayError as exc:
                replies[i] = exc
    return _outcomes(calls, replies)


async def run_step_async(client: AsyncClient, step: Step) -> Any:
    """Execute one step on an asyncio client (no retry)."""
    if isinstance(step, ScriptCall):
        return await _run_script_async(client, step)
    if isinstance(step, Command):
        try:
            return await _command(client)(*step.args)
        except ResponseError as exc:
            raise _command_error(step, exc) from exc
    if isinstance(step, EachCall):
        return await _run_pipeline_async(client, list(step.calls))
    return _first_error(await _run_pipeline_async(client, step))


async def run_with_retry_async(
    client: AsyncClient, step: Step, give_up_after: float | None, what: str
) -> Any:
    """Run one step; on a connection error, run it again under the shared retry policy."""
    began = time.monotonic()
    try:
        try:
            return await run_step_async(client, step)
        except RETRYABLE as exc:
            if not _retryable(exc):
                raise
        retrying = tenacity.AsyncRetrying(**retry_policy(_left(give_up_after, began), what))
        return await retrying(run_step_async, client, step)
    except AuthenticationError as exc:
        raise _auth_failed(exc) from exc


async def drive_async(
    client: AsyncClient, plan: Plan[T], give_up_after: float | None,
    what: str = "a queue operation",
) -> T:
    """Run a plan to its end on an asyncio client, retrying each step on connection errors
    (a step's streamdelay error is raised inside the plan, as ``drive_sync`` does)."""
    try:
        step = next(plan)
        while True:
            try:
                reply: Any = await run_with_retry_async(client, step, give_up_after, what)
            except StreamdelayError as exc:
                step = plan.throw(exc)
                continue
            step = plan.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    except RETRYABLE as exc:
        raise _gave_up(exc) from exc


async def call_with_retry(
    client: AsyncClient, step: Step, give_up_after: float | None, what: str
) -> Any:
    """Run one step under the shared retry policy (used by the worker and dispatcher loops)."""
    try:
        return await run_with_retry_async(client, step, give_up_after, what)
    except RETRYABLE as exc:
        raise _gave_up(exc) from exc


__all__ = [
    "RETRYABLE",
    "call_with_retry",
    "drive_async",
    "drive_sync",
    "retry_policy",
    "run_step_async",
    "run_step_sync",
    "run_with_retry_async",
    "run_with_retry_sync",
]
