"""Job options on the producer side (SPEC §18, docs/keys.md#job-options): ``enqueue(priority=,
key=, expires=)`` on both faces and in ``JobSpec``, the ``{key}`` id placement, the ``opts`` field
and the staged flags the enqueue scripts write, ``replace`` with options, and the field dropped
where a job ends for good (ack, cancel, purge of its dead letter). Against a real redis-server."""

from __future__ import annotations

import asyncio
import math
import zlib
from collections.abc import Callable
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import script
from tests.integration.test_queue_api import (
    Face,
    make_queue,
    run_worker,
    server_ms,
)

pytestmark = pytest.mark.timeout(120)
__all__ = ["make_queue"]  # the fixture, used by name
YEAR = 365 * 86400


def keys_for(q: Face, job_id: str) -> PartitionKeys:
    """The partition keys holding ``job_id``."""
    return PartitionKeys(q.config.name, partition_of(job_id, q.config.partitions))


def opts_of(q: Face, job_id: str) -> str | None:
    """The job's field in its partition's opts hash."""
    raw = q.client.hget(keys_for(q, job_id).opts, job_id)
    return None if raw is None else raw.decode()


def test_options_are_stored_as_one_field_and_shown_by_get(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    before = server_ms(q.client)
    done = q.enqueue("t", {"n": 1}, id="a", delay=60, priority=7, key="tenant-1", expires=30.0001)
    assert done.id == "{tenant-1}a" and done.created
    keys = keys_for(q, done.id)
    assert q.client.zscore(keys.delayed, done.id) == done.due
    assert opts_of(q, done.id) == f"7|{done.due + 30_001}|tenant-1"  # ceil of the ms
    assert q.client.hgetall(keys.staged) == {b"t": b"1"}
    info = q.get(done.id)
    assert info is not None and (info.priority, info.key) == (7, "tenant-1")
    assert info.expires_at == done.due + 30_001 and done.due >= before + 60_000


def test_a_plain_job_writes_no_options_and_priority_5_alone_is_plain(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue("t", 1, id="plain", delay=60)
    q.enqueue("t", 2, id="five", delay=60, priority=5)
    q.enqueue_many([sd.JobSpec("t", 3, id="spec5", priority=5)])
    keys = keys_for(q, "plain")
    assert not q.client.exists(keys.opts) and not q.client.exists(keys.staged)
    info = q.get("five")
    assert info is not None and (info.priority, info.key, info.expires_at) == (5, None, None)


def test_expires_alone_is_stored_but_does_not_stage_the_topic(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    done = q.enqueue("t", None, id="e", delay=10, expires=5)
    assert opts_of(q, "e") == f"5|{done.due + 5000}|"
    assert not q.client.exists(keys_for(q, "e").staged)
    info = q.get("e")
    assert info is not None and info.priority == 5 and info.key is None
    assert info.expires_at == done.due + 5000


def test_enqueue_many_carries_options_in_a_mixed_batch(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    results = q.enqueue_many([
        sd.JobSpec("t", 1, id="p1", delay=60),
        sd.JobSpec("t", 2, id="k1", delay=60, key="acme", priority=2),
        sd.JobSpec("u", 3, id="x1", delay=60, expires=1.5),
        sd.JobSpec("t", 4, key="acme"),
    ])
    ids = [r.id for r in results]
    assert ids[:3] == ["p1", "{acme}k1", "x1"]
    assert ids[3].startswith("{acme}") and len(ids[3]) == len("{acme}") + 32
    assert opts_of(q, "p1") is None
    assert opts_of(q, "{acme}k1") == "2||acme"
    assert opts_of(q, "x1") == f"5|{results[2].due + 1500}|"
    assert opts_of(q, ids[3]) == "5||acme"
    assert q.client.hgetall(keys_for(q, "p1").staged) == {b"t": b"1"}  # u has expiry only


def test_a_keyed_id_is_placed_by_its_key_and_found_by_get_and_cancel(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue(partitions=4)
    by_partition: dict[int, str] = {}
    n = 0
    while len(by_partition) < 4:
        by_partition.setdefault(zlib.crc32(f"k{n}".encode()) % 4, f"k{n}")
        n += 1
    for partition, key in sorted(by_partition.items()):
        made = [q.enqueue("t", i, key=key, delay=60).id for i in range(3)]
        made.append(q.enqueue("t", 9, key=key, id=f"{{{key}}}given", delay=60).id)
        for job_id in made:
            assert job_id.startswith(f"{{{key}}}")
            assert partition_of(job_id, 4) == partition
            assert q.client.hexists(PartitionKeys(q.config.name, partition).jobs, job_id)
            info = q.get(job_id)
            assert info is not None and info.key == key
        assert q.client.hgetall(PartitionKeys(q.config.name, partition).staged) == {b"t": b"1"}
        assert q.cancel(made[0]) is True and q.get(made[0]) is None
    # partition 0 carries the queue's flag for every staged topic, whatever partition the job
    assert q.client.hgetall(PartitionKeys(q.config.name, 0).staged) == {b"t": b"1"}


def test_the_queue_flag_is_set_for_jobs_on_other_partitions_in_a_batch(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue(partitions=3)
    key = next(f"k{n}" for n in range(100) if zlib.crc32(f"k{n}".encode()) % 3 == 2)
    q.enqueue_many([sd.JobSpec("plain", 1), sd.JobSpec("staged", 2, key=key)])
    assert q.client.hgetall(PartitionKeys(q.config.name, 0).staged) == {b"staged": b"1"}
    assert q.client.hgetall(PartitionKeys(q.config.name, 2).staged) == {b"staged": b"1"}
    assert not q.client.exists(PartitionKeys(q.config.name, 1).staged)


@pytest.mark.parametrize(("options", "field"), [
    ({"priority": 10}, "priority"), ({"priority": -1}, "priority"),
    ({"priority": True}, "priority"), ({"priority": "5"}, "priority"),
    ({"priority": 2.0}, "priority"),
    ({"key": ""}, "key"), ({"key": "k" * 65}, "key"), ({"key": "a b"}, "key"),
    ({"key": "{x}"}, "key"), ({"key": 5}, "key"),
    ({"expires": 0}, "expires"), ({"expires": -1}, "expires"),
    ({"expires": math.nan}, "expires"), ({"expires": math.inf}, "expires"),
    ({"expires": 10 * YEAR + 1}, "expires"), ({"expires": "10"}, "expires"),
    ({"key": "a", "id": "{b}x"}, "id"), ({"id": "{a}x"}, "id"),
    ({"key": "a", "id": "{a}"}, "id"), ({"key": "a", "id": "x y"}, "id"),
])
def test_bad_options_are_refused_naming_the_field_and_nothing_is_written(
        make_queue: Callable[..., Face], options: dict[str, Any], field: str) -> None:
    q = make_queue()
    with pytest.raises(sd.ValidationError) as caught:
        q.enqueue("t", 1, delay=60, **options)
    assert caught.value.field == field
    with pytest.raises(sd.ValidationError) as in_spec:
        q.enqueue_many([sd.JobSpec("t", 1, **options)])
    assert in_spec.value.field == field
    assert not list(q.client.scan_iter(match=f"sd:{{{q.config.name}#*"))


def test_replace_with_options_rewrites_the_field_and_without_drops_it(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue("t", 1, id="r", delay=60, key="k", priority=1)
    again = q.enqueue("t", 2, id="r", key="k", delay=30, priority=9, expires=2, replace=True)
    assert (again.id, again.state) == ("{k}r", "delayed") and not again.created
    assert opts_of(q, "{k}r") == f"9|{again.due + 2000}|k"
    taken = q.enqueue("t", 3, id="r", key="k", delay=30, priority=0)  # no replace: kept
    assert not taken.created and opts_of(q, "{k}r") == f"9|{again.due + 2000}|k"
    q.enqueue("t", 4, id="e", delay=60, expires=9)
    q.enqueue_many([sd.JobSpec("t", 5, id="e", delay=60, replace=True)])
    assert opts_of(q, "e") is None
    info = q.get("e")
    assert info is not None and info.body == 5 and info.expires_at is None


def test_debounce_takes_the_deadline_from_the_capped_due_time(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    first = q.enqueue("t", 1, id="d", delay=10, replace=True, max_wait=20, expires=1)
    later = q.enqueue("t", 2, id="d", delay=60, replace=True, max_wait=20, expires=1)
    assert later.due < first.due + 20_000 + 1  # capped at the first enqueue + max_wait
    assert opts_of(q, "d") == f"5|{later.due + 1000}|"


def test_the_field_goes_when_the_job_ends_and_stays_while_it_is_dead(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue("ok", 1, id="acked", key="k", expires=3600)
    run_worker(q, "ok", lambda job: None)
    assert opts_of(q, "{k}acked") is None
    q.enqueue("t", 1, id="cancelled", priority=8, delay=60)
    assert q.cancel("cancelled") and opts_of(q, "cancelled") is None
    q.enqueue("bad", 1, id="dead", key="k", max_attempts=1)

    def fail(job: sd.Job) -> None:
        raise RuntimeError("boom")

    run_worker(q, "bad", fail)
    assert opts_of(q, "{k}dead") == "5||k"  # a replay keeps priority and key
    info = q.get("{k}dead")
    assert info is not None and info.state == "dead" and info.key == "k"
    assert q.dead_purge(id="{k}dead") == 1
    assert opts_of(q, "{k}dead") is None
    assert not q.client.exists(keys_for(q, "x").opts)


def test_ending_jobs_of_a_queue_without_options_creates_no_options_key(
        make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue("ok", 1, id="a")
    run_worker(q, "ok", lambda job: None)
    q.enqueue("t", 1, id="b", delay=60)
    q.cancel("b")
    assert not list(q.client.scan_iter(match=keys_for(q, "a").prefix + "opts*"))


def test_concurrent_async_enqueues_with_options_share_rounds(
        redis_url: str, queue_name: str) -> None:
    async def run() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(queue_name, url=redis_url, partitions=2) as q:
            return await asyncio.gather(*(
                q.enqueue("t", i, delay=60, key=f"k{i % 3}", priority=i % 10,
                          expires=None if i % 2 else 4) for i in range(40)))

    results = asyncio.run(run())
    with sd.Queue(queue_name, url=redis_url, partitions=2) as q:
        for i, result in enumerate(results):
            key = f"k{i % 3}"
            assert result.id.startswith(f"{{{key}}}")
            expiry = "" if i % 2 else str(result.due + 4000)
            assert opts_of(q, result.id) == f"{i % 10}|{expiry}|{key}"


def test_the_batch_script_lets_the_last_job_of_an_id_decide_its_field(
        queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    blob = b"\x92\xa1j\xc4\x01x"

    def job(replace: str, opts: str) -> list[Any]:
        return ["j", "t", "r", 60_000, 30_000, 3, replace, blob, opts]

    call = script("enqueueJobs").call(
        keys.script_keys(), [3_600_000, 0, "1", *job("0", "3||k"), *job("1", "")])
    run_step_sync(queue.client, call)
    assert queue.client.hget(keys.opts, "j") is None
    call = script("enqueueJobs").call(
        keys.script_keys(), [3_600_000, 0, "1", *job("1", ""), *job("1", "4|10|")])
    [_, due] = run_step_sync(queue.client, call)
    deadline = int(due.split(b":")[1]) + 10
    assert queue.client.hget(keys.opts, "j") == f"4|{deadline}|".encode()
    with pytest.raises(sd.StreamdelayError, match="BAD_ARGS"):
        run_step_sync(queue.client, script("enqueueJobs").call(
            keys.script_keys(), [3_600_000, 0, "1", *job("1", "12||")]))
    with pytest.raises(sd.StreamdelayError, match="BAD_ARGS"):
        run_step_sync(queue.client, script("enqueueJob").call(
            keys.script_keys(), [3_600_000, "n", "t", "r", 1, 30_000, 3, blob, "5|x|"]))
    assert queue.client.hget(keys.jobs, "n") is None


def test_listed_jobs_show_their_options(make_queue: Callable[..., Face]) -> None:
    q = make_queue(partitions=2)
    made = [q.enqueue("t", i, delay=60 + i, key=f"k{i}", priority=i, expires=None if i else 9)
            for i in range(4)]
    q.enqueue("t", "plain", id="plain", delay=100)
    page = q.jobs("delayed")
    shown = {info.id: (info.priority, info.key, info.expires_at) for info in page.jobs}
    assert shown["plain"] == (5, None, None)
    for i, result in enumerate(made):
        assert shown[result.id] == (i, f"k{i}", None if i else result.due + 9000)

