"""Run a durable step: its script calls and ``WAIT`` (or ``WAITAOF``) in one pipeline, on one
connection, so the answer means "on the primary and on N replicas" at no extra round trip.

``WAIT`` counts the replicas that acknowledged every write *of the connection it is sent on*:
it must ride the connection that carried the scripts. On one server (or a Sentinel master) that
is one pipeline; on a cluster, the calls of each node go as one pipeline to that node, with its
own ``WAIT`` (redis-py's cluster pipelines refuse EVALSHA and cannot carry a keyless WAIT).
Right before each ``WAIT`` goes the fence (``protocol.durability.fence``), a keyed write in the
slot of the calls, so the wait covers other connections' writes too on every topology. A
redirection (a slot moved) refreshes the slot map and is retried like connection trouble: every
durable call is idempotent by id. docs/guarantees.md#durability, docs/design.md#durable-steps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any
from weakref import WeakKeyDictionary

import redis
from redis.asyncio.cluster import PipelineCommand
from redis.exceptions import AskError, ClusterError, MovedError, NoScriptError

from ..protocol.durability import (
    Durability,
    check_server,
    check_wait,
    fence,
    server_version,
    step_calls,
)
from ..protocol.plan import EachCall, Step
from ..protocol.scripts import ScriptCall
from .calls import RETRYABLE, call_outcomes, command, evalsha_args, first_error
from .clients import AsyncClient, SyncClient, is_cluster

_versions: WeakKeyDictionary[Any, tuple[int, int]] = WeakKeyDictionary()  # per client
Sent = tuple[list[Any], Any]  # the calls' replies (errors in place) and the WAIT reply


def _weakest(first: Any, second: Any) -> Any:
    """The weaker of two ``WAIT``/``WAITAOF`` replies (an error wins)."""
    if isinstance(first, Exception):
        return first
    if isinstance(second, Exception):
        return second
    if isinstance(first, list | tuple):
        return [min(int(a), int(b)) for a, b in zip(first, second, strict=True)]
    return min(int(first), int(second))


def _raise_trouble(replies: Sequence[Any]) -> None:
    """Raise the first connection trouble among ``replies`` (the step is then retried)."""
    for reply in replies:
        if isinstance(reply, RETRYABLE):
            raise reply


def _node_of(client: Any, key: str) -> Any:
    """The primary that holds ``key``'s slot (redis-py's ``get_node_from_key``, untyped)."""
    return client.get_node_from_key(key)


def _redirected(replies: Sequence[Any]) -> bool:
    return any(isinstance(reply, MovedError | AskError) for reply in replies)


def _result(step: Step, calls: list[ScriptCall], replies: list[Any], waited: Any,
            durability: Durability) -> Any:
    """What ``run_step`` answers for ``step``, once the ``WAIT`` reply was checked: a call's
    refusal (it wrote nothing) is raised before a short count."""
    if isinstance(waited, RETRYABLE):
        raise waited
    outcomes = call_outcomes(calls, replies)
    if isinstance(step, ScriptCall):
        first_error(outcomes)
        check_wait(durability, waited, calls)
        return outcomes[0]
    if not isinstance(step, EachCall):
        first_error(outcomes)
    check_wait(durability, waited, calls)
    return outcomes


# --- synchronous -------------------------------------------------------------------------

def _tail(calls: Sequence[ScriptCall], durability: Durability) -> list[Any]:
    """The commands after the calls: the fence (``durability.fence``), then WAIT."""
    return [*(cmd.args for cmd in fence(calls)), durability.command().args]


FENCED = len(fence([]))  # how many fence commands come between the calls and the WAIT


def _waited(answers: list[Any]) -> tuple[list[Any], Any]:
    """(the calls' replies, the WAIT reply); a refused fence command (ACL, a slot that moved)
    stands for the WAIT reply: without it the WAIT proves nothing about other connections."""
    replies, tail = answers[:-FENCED - 1], answers[-FENCED - 1:]
    return replies, next((r for r in tail[:-1] if isinstance(r, Exception)), tail[-1])


def _again(calls: Sequence[ScriptCall], missing: list[int]) -> tuple[int, list[Any]]:
    """The head of the second pipeline, for the calls the server did not know (NOSCRIPT: they
    did not run): ``SCRIPT LOAD`` of each of their scripts, then those calls by ``EVALSHA``
    again (not ``EVAL``, which the documented ACL does not grant: docs/security.md). Answers
    how many loads lead (their replies are dropped) and the commands."""
    sources = {calls[i].script.sha: calls[i].script.source for i in missing}
    return len(sources), [*(("SCRIPT", "LOAD", source) for source in sources.values()),
                          *(evalsha_args(calls[i]) for i in missing)]


def _send_sync(conn: redis.Redis, calls: Sequence[ScriptCall], durability: Durability) -> Sent:
    """The calls and the WAIT as one pipeline; calls the server did not know go again after
    their ``SCRIPT LOAD`` in a second pipeline with its own fence and WAIT (``_again``)."""
    pipe = conn.pipeline(transaction=False)
    for args in [*(evalsha_args(call) for call in calls), *_tail(calls, durability)]:
        command(pipe)(*args)
    replies, waited = _waited(pipe.execute(raise_on_error=False))
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        loads, head = _again(calls, missing)
        pipe = conn.pipeline(transaction=False)
        for args in [*head, *_tail(calls, durability)]:
            command(pipe)(*args)
        again, waited_again = _waited(pipe.execute(raise_on_error=False)[loads:])
        for i, reply in zip(missing, again, strict=True):
            replies[i] = reply
        waited = _weakest(waited, waited_again)
    return replies, waited


def _check_version_sync(conn: SyncClient, durability: Durability) -> None:
    if not durability.local_fsync:
        return
    if conn not in _versions:
        _versions[conn] = server_version(command(conn)("INFO", "server"))
    check_server(durability, _versions[conn])


def _refresh_sync(client: redis.RedisCluster) -> None:
    with contextlib.suppress(Exception):  # still settling: the retry policy comes back
        client.nodes_manager.initialize()


def _cluster_sync(client: redis.RedisCluster, calls: list[ScriptCall],
                  durability: Durability) -> Sent:
    replies: list[Any] = [None] * len(calls)
    by_node: dict[str, tuple[Any, list[int]]] = {}
    for index, call in enumerate(calls):
        node = _node_of(client, call.keys[0])
        by_node.setdefault(node.name, (node, []))[1].append(index)
    waited: Any = None
    for node, indexes in by_node.values():
        try:
            conn = client.get_redis_connection(node)
            _check_version_sync(conn, durability)
            got, node_waited = _send_sync(conn, [calls[i] for i in indexes], durability)
            _raise_trouble([*got, node_waited])
        except RETRYABLE:
            _refresh_sync(client)
            raise
        if _redirected([*got, node_waited]):
            _refresh_sync(client)
            raise ClusterError(f"slot moved during a durable call on {node.name}; retrying")
        for i, reply in zip(indexes, got, strict=True):
            replies[i] = reply
        waited = node_waited if waited is None else _weakest(waited, node_waited)
    return replies, waited


def run_durable_sync(client: SyncClient, step: Step, durability: Durability) -> Any:
    """Run ``step`` and ``WAIT`` on the same connection; ``NotDurable`` when too few replicas
    confirmed in time (see ``protocol.durability.check_wait``)."""
    calls = step_calls(step)
    if isinstance(client, redis.RedisCluster):
        replies, waited = _cluster_sync(client, calls, durability)
    else:
        _check_version_sync(client, durability)
        replies, waited = _send_sync(client, calls, durability)
    return _result(step, calls, replies, waited, durability)


# --- asyncio -----------------------------------------------------------------------------

async def _send_async(conn: Any, calls: Sequence[ScriptCall], durability: Durability) -> Sent:
    """``_send_sync`` on an asyncio client (``conn`` is a Redis client or a cluster node)."""
    async def once(argses: list[tuple[Any, ...]], loads: int = 0) -> tuple[list[Any], Any]:
        argses = [*argses, *_tail(calls, durability)]
        if isinstance(conn, redis.asyncio.Redis):
            pipe = conn.pipeline(transaction=False)
            for args in argses:
                command(pipe)(*args)
            return _waited((await pipe.execute(raise_on_error=False))[loads:])
        commands = [PipelineCommand(i, *args) for i, args in enumerate(argses)]
        await conn.execute_pipeline(commands)  # a cluster node: one connection
        return _waited([cmd.result for cmd in commands][loads:])

    replies, waited = await once([evalsha_args(call) for call in calls])
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if missing:
        loads, head = _again(calls, missing)
        again, waited_again = await once(head, loads)
        for i, reply in zip(missing, again, strict=True):
            replies[i] = reply
        waited = _weakest(waited, waited_again)
    return replies, waited


async def _check_version_async(key: Any, conn: Any, durability: Durability) -> None:
    if not durability.local_fsync:
        return
    if key not in _versions:
        if isinstance(conn, redis.asyncio.Redis):
            info = await command(conn)("INFO", "server")
        else:
            info = await conn.execute_command("INFO", "server")
        _versions[key] = server_version(info)
    check_server(durability, _versions[key])


async def _refresh_async(client: redis.asyncio.RedisCluster) -> None:
    with contextlib.suppress(Exception):  # still settling: the retry policy comes back
        await client.nodes_manager.initialize()


async def _cluster_async(client: redis.asyncio.RedisCluster, calls: list[ScriptCall],
                         durability: Durability) -> Sent:
    await client.initialize()
    replies: list[Any] = [None] * len(calls)
    by_node: dict[str, tuple[Any, list[int]]] = {}
    for index, call in enumerate(calls):
        node = _node_of(client, call.keys[0])
        by_node.setdefault(node.name, (node, []))[1].append(index)

    async def on_node(node: Any, indexes: list[int]) -> Sent:
        await _check_version_async(node, node, durability)
        got, node_waited = await _send_async(node, [calls[i] for i in indexes], durability)
        _raise_trouble([*got, node_waited])
        return got, node_waited

    try:  # the nodes concurrently, as the plain cluster path sends partitions
        sent = await asyncio.gather(*(on_node(node, indexes)
                                      for node, indexes in by_node.values()))
    except RETRYABLE:
        await _refresh_async(client)
        raise
    waited: Any = None
    for (node, indexes), (got, node_waited) in zip(by_node.values(), sent, strict=True):
        if _redirected([*got, node_waited]):
            await _refresh_async(client)
            raise ClusterError(f"slot moved during a durable call on {node.name}; retrying")
        for i, reply in zip(indexes, got, strict=True):
            replies[i] = reply
        waited = node_waited if waited is None else _weakest(waited, node_waited)
    return replies, waited


async def run_durable_async(client: AsyncClient, step: Step, durability: Durability) -> Any:
    """``run_durable_sync`` on an asyncio client."""
    calls = step_calls(step)
    if is_cluster(client):
        assert isinstance(client, redis.asyncio.RedisCluster)
        replies, waited = await _cluster_async(client, calls, durability)
    else:
        await _check_version_async(client, client, durability)
        replies, waited = await _send_async(client, calls, durability)
    return _result(step, calls, replies, waited, durability)


__all__ = ["run_durable_async", "run_durable_sync"]
