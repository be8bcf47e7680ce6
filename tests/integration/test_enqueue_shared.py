"""``enqueueJobs`` with its shared values (ARGV[3] ``2``, docs/keys.md#enqueue-from-another-
language): topic, when_kind, ttr and max_attempts once per call, then id, when_ms, blob per job.
It writes what the same jobs one value set each (flag ``0``) write, answers one number (the
created time in ms) when every job was created, and one value per job otherwise."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)
BLOB = b"\x92\xa1j\xc4\x01x"


def call(client: redis.Redis, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run ``enqueueJobs`` directly."""
    return run_step_sync(client, script("enqueueJobs").call(keys.script_keys(), args))


def shared(kind: str, *jobs: tuple[str, Any], ttr: Any = 30_000) -> list[Any]:
    """A flag-2 call's ARGV: each job an (id, when_ms) on topic ``t``."""
    return [3_600_000, 0, "2", "t", kind, ttr, 3, *(v for i, w in jobs for v in (i, w, BLOB))]


def plain(kind: str, *jobs: tuple[str, Any]) -> list[Any]:
    """The same jobs as a flag-0 call."""
    return [3_600_000, 0, "0", *(v for i, w in jobs for v in (i, "t", kind, w, 30_000, 3, "0",
                                                                BLOB))]


def test_a_shared_call_writes_what_one_value_set_per_job_writes(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    at = 1_900_000_000_000
    created = call(client, keys, shared("a", ("a1", at), ("a2", at + 7)))
    call(client, keys, plain("a", ("b1", at), ("b2", at + 7)))
    for mine, theirs in (("a1", "b1"), ("a2", "b2")):
        rec_a, rec_b = client.hget(keys.jobs, mine), client.hget(keys.jobs, theirs)
        assert rec_a is not None and rec_b is not None
        fields_a, fields_b = rec_a.split(b"|"), rec_b.split(b"|")
        # the created time (field 3) may differ by the ms between the calls
        assert fields_a[:3] + fields_a[4:] == fields_b[:3] + fields_b[4:]
        assert abs(int(fields_a[3]) - created) <= 1
        assert client.zscore(keys.delayed, mine) == client.zscore(keys.delayed, theirs)
    assert client.hget(keys.counts, "t") == b"4"
    assert client.zrange(keys.wake, 0, -1) == [b"w"]


def test_every_job_created_answers_the_created_time_and_the_library_its_due_times(
    queue: sd.Queue
) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    created = call(client, keys, shared("r", ("r1", 60_000), ("r2", 0)))
    assert isinstance(created, int) and created > 0
    assert client.zscore(keys.delayed, "r1") == created + 60_000
    assert client.zscore(keys.delayed, "r2") == created
    assert int(client.hget(keys.jobs, "r1").split(b"|")[3]) == created  # type: ignore[union-attr]
    # through the library: the results are the due times, as one value per job gave them
    results = queue.enqueue_many([sd.JobSpec("t", i, id=f"q{i}", delay=i) for i in range(3)]
                                 + [sd.JobSpec("t", 9, id="q9", delay=9)])
    assert [r.id for r in results] == ["q0", "q1", "q2", "q9"]
    assert all(r.created and r.state == "delayed" for r in results)
    for r in results:
        assert client.zscore(keys.delayed, r.id) == r.due
    at = 1_900_000_000.5
    [absolute] = queue.enqueue_many([sd.JobSpec("t", 1, id="abs", at=at)])
    assert absolute.due == 1_900_000_000_500 == client.zscore(keys.delayed, "abs")


def test_a_taken_or_repeated_id_answers_one_value_per_job(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    at = 1_900_000_000_000
    call(client, keys, shared("a", ("old", at)))
    reply = call(client, keys, shared("a", ("n1", at + 1), ("old", at + 2), ("n2", at + 3),
                                      ("n1", at + 4)))
    assert reply == [at + 1, f"d:{at}".encode(), at + 3, f"d:{at + 1}".encode()]
    assert client.zscore(keys.delayed, "old") == at  # replace is never set in a shared call
    assert client.hget(keys.counts, "t") == b"3"
    # through the library: the existing job reported, the new one created
    results = queue.enqueue_many([sd.JobSpec("t", 1, id="old", at=at / 1000 + 5), sd.JobSpec(
        "t", 1, id="n3", at=at / 1000)])
    assert (results[0].created, results[0].due) == (False, at)
    assert (results[1].created, results[1].due) == (True, at)


def test_a_fraction_of_a_ms_answers_one_value_per_job(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    reply = call(client, keys, shared("r", ("f1", 1000), ("f2", "1000.5")))
    assert isinstance(reply, list) and len(reply) == 2
    assert reply[1] - reply[0] in (0, 1)  # 1000.5 ms: rounded up to the next whole ms
    assert call(client, keys, shared("r")) == []  # no job: an empty list


def test_malformed_shared_calls_are_refused_before_any_write(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        call(client, keys, shared("r", ("x", 1000))[:-1])  # a job's blob missing
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        call(client, keys, [3_600_000, 0, "2", "t", "r", 30_000])  # max_attempts missing
    with pytest.raises(sd.ScriptError):
        call(client, keys, shared("r", ("x", 1000), ttr="soon"))
    with pytest.raises(sd.ValidationError):  # AT_IN_PAST
        call(client, keys, shared("a", ("x", 1_900_000_000_000), ("y", 1)))
    assert list(client.scan_iter(match=keys.prefix + "*")) == []


def snapshot(client: redis.Redis, keys: PartitionKeys) -> dict[str, bytes | None]:
    """Every key of the partition, dumped."""
    return {k.decode(): client.dump(k) for k in sorted(client.scan_iter(match=keys.prefix + "*"))}


@pytest.mark.parametrize("key", ["delayed", "wake", "counts", "jobs"])
@pytest.mark.parametrize("flag", ["0", "2"])
def test_a_plain_call_refuses_a_key_it_writes_of_another_type(
    queue: sd.Queue, key: str, flag: str
) -> None:
    """The types of delayed and wake are checked (TYPE), those of counts and jobs by their first
    read (HMGET): refused by name before any write, keep_done 0 (no purge)."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", 1, id="first", delay=60)
    client.set(getattr(keys, key), "foreign")
    before = snapshot(client, keys)
    args = shared("r", ("new", 1000)) if flag == "2" else plain("r", ("new", 1000))
    with pytest.raises(sd.ScriptError) as refused:
        call(client, keys, args)
    assert f"key {getattr(keys, key)} holds a string" in str(refused.value)
    assert snapshot(client, keys) == before


@pytest.mark.parametrize("key", ["groups", "done"])
def test_groups_and_done_are_checked_when_an_id_is_taken_or_repeated(
    queue: sd.Queue, key: str
) -> None:
    """A taken id, a repeated one or the tombstone purge may read or write groups and done: then
    their types are checked before any write; a call of new ids alone does not touch them."""
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", 1, id="first", delay=60)
    client.set(getattr(keys, key), "foreign")
    before = snapshot(client, keys)
    for args in (shared("r", ("new", 1000), ("first", 1000)),  # a taken id
                 shared("r", ("new", 1000), ("new", 2000)),  # a repeated one
                 [3_600_000, 60_000, *shared("r", ("new", 1000))[2:]]):  # keep_done: the purge
        with pytest.raises(sd.ScriptError) as refused:
            call(client, keys, args)
        assert f"key {getattr(keys, key)} holds a string" in str(refused.value)
        assert snapshot(client, keys) == before
    assert isinstance(call(client, keys, shared("r", ("new", 1000))), int)
