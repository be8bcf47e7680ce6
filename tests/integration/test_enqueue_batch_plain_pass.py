"""``enqueueJobs``' plain pass (lua/enqueueJobs-6.lua): a call without options whose jobs all have
replace ``0``, distinct ids and whole numbers of ms is built in its first pass and written at once
when every id is free. Each test sends the same jobs once in a way that takes the plain pass and
once in a way that leaves it at some job (a repeated id, a replace, a fraction, a taken id, a ttr
that is no number), and checks every record, score, count and answer against the other, or
against what the general per-job loop answers."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.base.errors import ScriptError
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)
BLOB = b"\x92\xa1j\xc4\x01x"
AT = 1_900_000_000_000


def call(client: redis.Redis, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run ``enqueueJobs`` directly."""
    return run_step_sync(client, script("enqueueJobs").call(keys.script_keys(), args))


def shared(*jobs: tuple[str, Any], kind: str = "a", ttr: Any = 30_000,
           topic: str = "t") -> list[Any]:
    """A flag-2 call's ARGV: each job an (id, when_ms)."""
    return [3_600_000, 0, "2", topic, kind, ttr, 3, *(v for i, w in jobs for v in (i, w, BLOB))]


def plain(*jobs: tuple[str, str, Any, str], kind: str = "a", ttr: Any = 30_000) -> list[Any]:
    """A flag-0 call's ARGV: each job an (id, topic, when_ms, replace)."""
    return [3_600_000, 0, "0", *(v for i, t, w, r in jobs
                                 for v in (i, t, kind, w, ttr, 3, r, BLOB))]


def records(client: redis.Redis, keys: PartitionKeys) -> dict[bytes, bytes]:
    """The jobs hash, created times (field 3) blanked: they follow each call's clock."""
    out = {}
    for job, rec in client.hgetall(keys.jobs).items():
        fields = rec.split(b"|")
        fields[3] = b"-"
        out[job] = b"|".join(fields)
    return out


def test_jobs_sharing_a_due_time_and_jobs_each_with_its_own_write_the_same_records(
    queue: sd.Queue
) -> None:
    client = queue.client
    a, b = PartitionKeys(queue.name, 0), PartitionKeys(queue.name + "b", 0)
    dues = [AT, AT, AT + 5, AT, AT + 5, AT + 5, AT + 9]
    assert isinstance(call(client, a, shared(*((f"j{k}", d) for k, d in enumerate(dues)))), int)
    # one job per call: no due time shared with the job before
    for k, d in enumerate(dues):
        call(client, b, shared((f"j{k}", d)))
    assert records(client, a) == records(client, b)
    assert client.zrange(a.delayed, 0, -1, withscores=True) == client.zrange(
        b.delayed, 0, -1, withscores=True)
    assert client.hget(a.counts, "t") == client.hget(b.counts, "t") == b"7"


def test_a_repeated_id_answers_the_first_job_and_keeps_its_record(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    reply = call(client, keys, shared(("x", AT), ("y", AT + 1), ("x", AT + 2)))
    assert reply == [AT, AT + 1, f"d:{AT}".encode()]
    assert client.zscore(keys.delayed, "x") == AT
    assert client.hget(keys.jobs, "x").split(b"|")[2] == str(AT).encode()  # type: ignore[union-attr]
    assert client.hget(keys.counts, "t") == b"2"


def test_a_taken_id_in_a_plain_batch_answers_its_job_and_writes_the_others(
    queue: sd.Queue
) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, keys, plain(("old", "u", AT + 50, "0")))
    reply = call(client, keys, plain(("n1", "t", AT, "0"), ("old", "t", AT + 1, "0"),
                                     ("n2", "u", AT + 2, "0")))
    assert reply == [AT, f"d:{AT + 50}".encode(), AT + 2]
    assert client.zscore(keys.delayed, "old") == AT + 50
    assert client.hget(keys.counts, "t") == b"1"
    assert client.hget(keys.counts, "u") == b"2"
    # the flag-2 form of a batch with a taken id: one value per job
    reply = call(client, keys, shared(("n3", AT), ("n1", AT + 3)))
    assert reply == [AT, f"d:{AT}".encode()]


def test_a_replace_after_plain_jobs_replaces_as_the_general_loop_does(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, keys, plain(("r", "t", AT + 50, "0")))
    reply = call(client, keys, plain(("p1", "t", AT, "0"), ("p2", "t", AT, "0"),
                                     ("r", "t", AT + 7, "1")))
    assert reply == [AT, AT, f"d:{AT + 7}".encode()]
    assert client.zscore(keys.delayed, "r") == AT + 7
    assert client.hget(keys.counts, "t") == b"3"


def test_a_fraction_of_a_ms_leaves_the_plain_pass_with_the_same_records(
    queue: sd.Queue
) -> None:
    client = queue.client
    a, b = PartitionKeys(queue.name, 0), PartitionKeys(queue.name + "b", 0)
    reply = call(client, a, shared(("f1", AT), ("f2", AT), ("f3", f"{AT}.5")))
    assert reply == [AT, AT, AT]  # a list: not every when_ms a whole number
    assert client.zscore(a.delayed, "f3") == AT + 0.5
    call(client, b, shared(("f1", AT), ("f2", AT)))
    call(client, b, shared(("f3", f"{AT}.5")))
    assert records(client, a) == records(client, b)


def test_a_past_time_after_shared_due_times_is_refused_with_nothing_written(
    queue: sd.Queue
) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    past = AT - 10**12
    with pytest.raises(sd.ValidationError):
        call(client, keys, shared(("ok1", AT), ("ok2", AT), ("late", past)))
    with pytest.raises(sd.ValidationError):
        call(client, keys, plain(("ok1", "t", AT, "0"), ("late", "t", past, "0")))
    assert client.exists(keys.jobs, keys.delayed, keys.counts) == 0


def test_a_ttr_that_is_no_number_fails_only_where_a_record_is_built(queue: sd.Queue) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    call(client, keys, plain(("taken", "t", AT, "0")))
    # the one job's id is taken: no record is built, the call answers its job
    assert call(client, keys, plain(("taken", "t", AT + 1, "0"), ttr="abc")) == [
        f"d:{AT}".encode()]
    with pytest.raises(ScriptError, match="'format'"):
        call(client, keys, plain(("free", "t", AT, "0"), ttr="abc"))
    with pytest.raises(ScriptError, match="'format'"):
        call(client, keys, shared(("free", AT), ttr="abc"))
    assert client.hkeys(keys.jobs) == [b"taken"]


def test_a_plain_batch_with_events_on_writes_each_due_time_as_its_detail(
    queue: sd.Queue
) -> None:
    client = queue.client
    keys = PartitionKeys(queue.name, 0)
    client.hset(keys.prefix + "meta", "events", 1000)
    assert isinstance(call(client, keys, shared(("e1", AT), ("e2", AT), ("e3", AT + 4))), int)
    call(client, keys, plain(("e4", "t", AT + 1, "0"), ("e5", "u", AT + 2, "0")))
    entries = client.xrange(keys.prefix + "events")
    assert [e[1][b"i"] for e in entries] == [b"e1\ne2\ne3", b"e4\ne5"]
    assert [e[1][b"d"] for e in entries] == [
        f"{AT}\n{AT}\n{AT + 4}".encode(), f"{AT + 1}\n{AT + 2}".encode()]
