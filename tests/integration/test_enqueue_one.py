"""The one-job enqueue script (``enqueueJob``, docs/keys.md#the-one-job-enqueue): it writes the
same record as ``enqueueJobs``, answers 0 and writes nothing when the id is taken (the caller
goes on through ``enqueueJobs``), and a call that fails writes nothing (it checks no types
first: a failed write takes back the ones before it)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)
BLOB = b"\x92\xa1j\xc4\x01x"


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def snapshot(client: redis.Redis, keys: PartitionKeys) -> dict[str, bytes | None]:
    """Every key of the partition, dumped."""
    return {k.decode(): client.dump(k) for k in sorted(client.scan_iter(match=keys.prefix + "*"))}


def one(job_id: str, delay_ms: int = 60_000) -> list[Any]:
    """enqueueJob's ARGV for one job ``delay_ms`` from now."""
    return [3_600_000, job_id, "t", "r", delay_ms, 30_000, 3, BLOB]


def many(job_id: str, delay_ms: int = 60_000) -> list[Any]:
    """enqueueJobs's ARGV for the same job."""
    return [3_600_000, 0, "0", job_id, "t", "r", delay_ms, 30_000, 3, "0", BLOB]


def test_the_one_job_script_writes_what_enqueue_jobs_writes(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    due = call(client, "enqueueJob", keys, one("a"))
    [due_b] = call(client, "enqueueJobs", keys, many("b"))
    rec_a, rec_b = client.hget(keys.jobs, "a"), client.hget(keys.jobs, "b")
    assert rec_a is not None and rec_b is not None
    # same layout: only the times may differ
    assert rec_a.split(b"|")[0:2] == rec_b.split(b"|")[0:2] == [b"d", b"0"]
    assert rec_a.split(b"|")[4:] == rec_b.split(b"|")[4:]
    assert client.zscore(keys.delayed, "a") == due and abs(due - due_b) < 5_000
    assert client.hget(keys.counts, "t") == b"2"
    assert client.zrange(keys.wake, 0, -1) == [b"w"]  # the first job became the head


def test_a_taken_id_answers_zero_and_writes_nothing(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "enqueueJob", keys, one("a"))
    before = snapshot(client, keys)
    assert call(client, "enqueueJob", keys, one("a", 5)) == 0
    assert snapshot(client, keys) == before


def test_queue_enqueue_of_a_taken_id_goes_through_enqueue_jobs(queue: sd.Queue) -> None:
    first = queue.enqueue("t", 1, id="x", delay=60)
    again = queue.enqueue("t", 2, id="x", delay=5)
    assert first.created and not again.created and again.due == first.due
    replaced = queue.enqueue("t", 3, id="x", delay=120, replace=True)
    assert replaced.due > first.due
    info = queue.get("x")
    assert info is not None and info.body == 3


def test_an_absolute_time_too_far_in_the_past_is_refused(queue: sd.Queue) -> None:
    with pytest.raises(sd.ValidationError) as refused:
        queue.enqueue("t", 1, id="old", at=1.0)
    assert refused.value.field == "at"
    assert queue.get("old") is None


@pytest.mark.parametrize("key", ["delayed", "jobs", "wake", "counts"])
def test_a_foreign_key_of_the_wrong_type_writes_nothing(queue: sd.Queue, key: str) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "enqueueJob", keys, one("first"))
    client.delete(getattr(keys, key))
    client.set(getattr(keys, key), "foreign")
    before = snapshot(client, keys)
    with pytest.raises(sd.ScriptError) as refused:  # due first: the new head, every key written
        call(client, "enqueueJob", keys, one("new", 1_000))
    assert snapshot(client, keys) == before
    assert f"key {getattr(keys, key)} holds a string" in str(refused.value)


@pytest.mark.parametrize("head", [True, False])
def test_a_count_that_is_no_number_writes_nothing(queue: sd.Queue, head: bool) -> None:
    """``HINCRBY`` fails on a counts field a foreign client filled with text: the record, the
    delayed entry and the wake marker written before it are taken back."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "enqueueJob", keys, one("first"))
    client.hset(keys.counts, "t", "not a number")
    before = snapshot(client, keys)
    with pytest.raises(sd.ScriptError, match="not an integer"):
        call(client, "enqueueJob", keys, one("new", 1_000 if head else 120_000))
    assert snapshot(client, keys) == before


def test_the_head_sets_the_wake_marker_and_a_later_job_leaves_it(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    first = call(client, "enqueueJob", keys, one("first", 60_000))
    assert client.zrange(keys.wake, 0, -1, withscores=True) == [(b"w", first)]
    call(client, "enqueueJob", keys, one("later", 120_000))
    assert client.zrange(keys.wake, 0, -1, withscores=True) == [(b"w", first)]
    head = call(client, "enqueueJob", keys, one("head", 1_000))
    assert client.zrange(keys.wake, 0, -1, withscores=True) == [(b"w", head)]


def test_bad_arguments_are_refused(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        call(queue.client, "enqueueJob", keys, one("a")[:-1])
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        call(queue.client, "enqueueJob", keys, ["x", *one("a")[1:]])


def test_an_async_caller_alone_gets_the_same_outcomes(queue: sd.Queue) -> None:
    async def run() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as aq:
            first = await aq.enqueue("t", 1, id="y", delay=60)
            again = await aq.enqueue("t", 2, id="y", delay=5)
            replaced = await aq.enqueue("t", 3, id="y", delay=120, replace=True)
            return [first, again, replaced]

    first, again, replaced = asyncio.run(run())
    assert first.created and not again.created and again.due == first.due
    assert replaced.created is False and replaced.due > first.due
    info = queue.get("y")
    assert info is not None and info.body == 3
    with pytest.raises(sd.ValidationError):
        asyncio.run(_past(queue))


async def _past(queue: sd.Queue) -> None:
    async with sd.AsyncQueue(queue.name, url=queue.config.url) as aq:
        await aq.enqueue("t", 1, id="old", at=1.0)


def test_enqueue_jobs_with_a_count_that_is_no_number_writes_nothing(queue: sd.Queue) -> None:
    """The batch script checks its topics' count fields before its first write (its
    ``HINCRBY`` comes after the records and delayed entries are written)."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, "enqueueJobs", keys, many("first"))
    client.hset(keys.counts, "t", "1.5")
    before = snapshot(client, keys)
    with pytest.raises(sd.ScriptError, match="not an integer"):
        call(client, "enqueueJobs", keys, many("new", 1_000))
    assert snapshot(client, keys) == before
