"""One step of a plan sent to Redis, no retry: EVALSHA with a reload on NOSCRIPT (also inside
pipelines), error mapping, and the pipelines of script calls and plain commands
(``protocol/plan.py``'s steps), on a synchronous and an asyncio client. ``runner.py`` drives
plans through these under its retry policy; ``waiting.py`` adds ``WAIT`` after a durable step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, TypeGuard

import redis
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError

from ..base.errors import StreamdelayError
from ..protocol.durability import Durability, is_durable
from ..protocol.plan import Command, Commands, EachCall, Step
from ..protocol.scripts import Script, ScriptCall
from .calls import (
    RETRYABLE,
    call_outcomes,
    command,
    command_error,
    eval_args,
    evalsha_args,
    first_error,
    map_error,
    old_server,
    reply_options,
    send,
)
from .clients import AsyncClient, SyncClient, is_cluster, plain_pool
from .waiting import run_durable_async, run_durable_sync

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
    if _lean(client):
        return _command_replies(step, await _round_trip_async(client, step.commands))
    pipe = client.pipeline(transaction=False)
    for each in step.commands:
        send(pipe, each)
    return _command_replies(step, await pipe.execute(raise_on_error=False))


def _lean(client: AsyncClient) -> TypeGuard[aioredis.Redis]:
    """A one-server asyncio client with a connection pool: plain commands go through
    ``_round_trip_async`` (a cluster's go through redis-py, which routes them)."""
    return isinstance(client, aioredis.Redis) and client.connection is None


async def _round_trip_async(client: aioredis.Redis, commands: Sequence[Command]) -> list[Any]:
    """``commands`` written at once on one pooled connection, and their replies read in order
    (a command's error reply in its place), as a pipeline would, without redis-py's pipeline
    object or its per-command bookkeeping (observability hooks, the retry wrapper): the
    Worker's reads go this way, alone or with ``TIME`` (docs/events.md#started); through the
    pipeline object, a read with ``TIME`` cost ~80 µs more than one command
    (docs/benchmarks.md#lifecycle-events), and both of a drain's sides read alike now.
    No retry here: the runner's policy decides (``runner.py``). A connection left with
    replies unread (an error, a timeout, a cancelled read) is closed, never reused."""
    pool: Any = client.connection_pool  # untyped upstream
    conn = await pool.get_connection()
    try:
        await conn.send_packed_command(conn.pack_commands([each.args for each in commands]))
        replies: list[Any] = []
        for each in commands:
            try:
                replies.append(await client.parse_response(conn, each.args[0],
                                                            **reply_options(each)))
            except ResponseError as exc:  # read whole: the connection stays in step
                replies.append(exc)
        return replies
    except BaseException:
        await conn.disconnect(nowait=True)
        raise
    finally:
        await pool.release(conn)


async def run_step_async(client: AsyncClient, step: Step,
                         durability: Durability | None = None) -> Any:
    """Execute one step on an asyncio client (no retry); see ``run_step_sync``."""
    if durability is not None and is_durable(step):
        return await run_durable_async(client, step, durability)
    if isinstance(step, ScriptCall):
        return await _run_script_async(client, step)
    if isinstance(step, Command):
        if _lean(client):
            return _command_replies(Commands((step,)), await _round_trip_async(client, (step,)))[0]
        try:
            return await send(client, step)
        except ResponseError as exc:
            raise command_error(step, exc) from exc
    if isinstance(step, Commands):
        return await _run_commands_async(client, step)
    if isinstance(step, EachCall):
        return await _run_pipeline_async(client, list(step.calls))
    return first_error(await _run_pipeline_async(client, step))
