"""``commandWorker-2`` against a real server (docs/operations.md#quiet-and-stop, keys.md#fleet):
a command for a live worker entry only, tied to that process's start time, a quiet that does
not undo a stop, pull consumers and expired entries refused, and the hash's bound."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.fleet_records import (
    WorkerCommand,
    command_plan,
    command_read,
    info_blob,
    parse_command,
)
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.layouts import join_fleet_call
from streamdelay.protocol.plan import Plan, Step


def join(q: sd.Queue, name: str, started_ms: int, kind: str = "worker",
         ttl_s: float = 30.0) -> None:
    """Write a fleet entry for ``name`` as its process would."""
    blob = info_blob(host="h", pid=1, version="", group="g", topics=["t"], concurrency=1,
                     started_ms=started_ms, running=[], state="running", kind=kind)
    q._run(_one(join_fleet_call(q.config.name, name, blob, ttl_s)))


def _one(step: Step) -> Plan[Any]:
    """A plan of one step (its reply)."""
    return (yield step)


def command(q: sd.Queue, name: str, verb: WorkerCommand) -> int:
    """``commandWorker``'s reply."""
    return int(q._operate(command_plan(q.config.name, name, verb)))


def read(q: sd.Queue, name: str, started_ms: int) -> str | None:
    """What worker ``name``, started at ``started_ms``, reads of its command."""
    return parse_command(q._operate(_one(command_read(q.config.name, name))), started_ms)


def test_a_command_is_for_one_live_worker_process(queue: sd.Queue) -> None:
    join(queue, "w-1", 1_000)
    assert read(queue, "w-1", 1_000) is None
    assert command(queue, "w-1", "quiet") == 1
    assert command(queue, "w-1", "quiet") == 0
    assert read(queue, "w-1", 1_000) == "quiet"
    assert read(queue, "w-1", 2_000) is None  # a later process of the same name: not for it
    assert command(queue, "w-1", "stop") == 1
    assert command(queue, "w-1", "quiet") == 0  # a quiet does not undo a stop
    assert read(queue, "w-1", 1_000) == "stop"
    join(queue, "w-1", 2_000)  # restarted under the same name: a new command for the new one
    assert command(queue, "w-1", "quiet") == 1
    assert read(queue, "w-1", 2_000) == "quiet" and read(queue, "w-1", 1_000) is None


def test_unknown_pull_and_expired_names_are_refused(queue: sd.Queue) -> None:
    join(queue, "w-live", 1_000)
    assert command(queue, "nobody", "stop") == -1
    join(queue, "puller", 1_000, kind="pull")
    assert command(queue, "puller", "quiet") == -2
    join(queue, "w-short", 1_000, ttl_s=0.05)
    time.sleep(0.2)
    assert command(queue, "w-short", "stop") == -1
    with pytest.raises(sd.WorkerNotFound) as caught:
        queue.stop_worker("nobody")
    assert caught.value.field == "name" and "nobody" in str(caught.value)
    with pytest.raises(sd.WorkerNotFound, match="pull"):
        queue.quiet_worker("puller")
    with pytest.raises(sd.ValidationError):
        queue.quiet_worker("bad name with spaces")
    assert queue.quiet_worker("w-live") is True and queue.quiet_worker("w-live") is False


def test_the_commands_hash_is_bounded_and_expires(queue: sd.Queue, redis_url: str) -> None:
    key = PartitionKeys(queue.config.name, 0).commands
    join(queue, "w-1", 1_000)
    assert command(queue, "w-1", "quiet") == 1
    client = redis.Redis.from_url(redis_url)
    ttl_ms = client.pttl(key)
    assert 0 < ttl_ms <= 2 * 600_000  # 2 x the time a command is kept
    client.hset(key, "w-old", "quiet|5|1")  # an expired command of a worker long gone
    for _ in range(20):  # each call samples 16 fields: the expired one goes
        command(queue, "w-1", "quiet")
        if not client.hexists(key, "w-old"):
            break
    assert not client.hexists(key, "w-old")
    client.close()
