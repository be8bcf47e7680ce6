"""A dispatcher sends its promote calls on a held connection of its client's pool
(``io/lane.py``, ``AsyncLane``); whatever happens to that connection, the call goes the
ordinary way and every due job reaches its stream once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys

pytestmark = pytest.mark.timeout(60)


def evalsha_clients(client: redis.Redis, before: set[int]) -> list[int]:
    """Server-side ids of the connections opened since ``before`` (the ids connected then)
    whose last command was EVALSHA."""
    return [int(c["id"]) for c in client.client_list()
            if c["cmd"] == "evalsha" and int(c["id"]) not in before]


def connected(client: redis.Redis) -> set[int]:
    """Server-side ids of every connection now."""
    return {int(c["id"]) for c in client.client_list()}


def entries(queue: sd.Queue, keys: PartitionKeys) -> list[str]:
    """Job ids in the topic stream, in stream order."""
    return [fields[b"id"].decode() for _, fields in queue.client.xrange(keys.stream("t"))]


def promote_with(queue: sd.Queue, between: Callable[[sd.Dispatcher], Awaitable[None]],
                 calls: int) -> list[int]:
    """``calls`` promote calls of 2 jobs each, ``between`` run after the first; jobs moved."""
    keys = PartitionKeys(queue.name, 0)

    async def run() -> list[int]:
        dispatcher = sd.Dispatcher(queue.config, batch=2)
        try:
            moved = [(await dispatcher.promote_once(keys)).moved]
            await between(dispatcher)
            for _ in range(calls - 1):
                moved.append((await dispatcher.promote_once(keys)).moved)
            return moved
        finally:
            await dispatcher.close()

    return asyncio.run(run())


def due_jobs(queue: sd.Queue, n: int) -> list[str]:
    """``n`` jobs due now, in due order."""
    now = queue.client.time()[0] - 60
    ids = [f"j{i}" for i in range(n)]
    queue.enqueue_many(sd.JobSpec("t", i, at=now + i * 0.01, id=job_id)
                       for i, job_id in enumerate(ids))
    return ids


async def nothing(dispatcher: sd.Dispatcher) -> None:
    """No change between the calls."""


def test_promote_calls_share_one_held_connection(queue: sd.Queue) -> None:
    ids = due_jobs(queue, 8)
    before = connected(queue.client)
    seen: list[list[int]] = []

    async def look(dispatcher: sd.Dispatcher) -> None:
        seen.append(evalsha_clients(queue.client, before))
        pool = dispatcher.client.connection_pool  # type: ignore[union-attr]
        seen.append([len(pool._in_use_connections)])  # the lane keeps its connection taken

    assert promote_with(queue, look, 4) == [2, 2, 2, 2]
    # the first call met NOSCRIPT on the lane and went the ordinary way (which loads the script)
    assert 1 <= len(seen[0]) <= 2 and seen[1] == [1]
    assert entries(queue, PartitionKeys(queue.name, 0)) == ids


def test_a_killed_lane_connection_costs_no_job(queue: sd.Queue) -> None:
    ids = due_jobs(queue, 8)
    before = connected(queue.client)

    async def kill(dispatcher: sd.Dispatcher) -> None:
        for client_id in evalsha_clients(queue.client, before):
            queue.client.client_kill_filter(_id=client_id)

    assert promote_with(queue, kill, 4) == [2, 2, 2, 2]  # the next call went the ordinary way
    assert entries(queue, PartitionKeys(queue.name, 0)) == ids


def test_a_flushed_script_cache_is_loaded_again(queue: sd.Queue) -> None:
    ids = due_jobs(queue, 6)

    async def flush(dispatcher: sd.Dispatcher) -> None:
        queue.client.script_flush()

    assert promote_with(queue, flush, 3) == [2, 2, 2]
    assert entries(queue, PartitionKeys(queue.name, 0)) == ids


def test_a_script_refusal_still_raises_through_the_lane(queue: sd.Queue) -> None:
    due_jobs(queue, 4)
    keys = PartitionKeys(queue.name, 0)

    async def spoil(dispatcher: sd.Dispatcher) -> None:
        queue.client.set(keys.counts, "not a hash")

    with pytest.raises(sd.ScriptError, match="holds a string"):
        promote_with(queue, spoil, 2)
    queue.client.delete(keys.counts)
    assert promote_with(queue, nothing, 2) == [2, 0]
    assert entries(queue, keys) == ["j0", "j1", "j2", "j3"]
