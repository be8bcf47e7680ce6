"""``ackJobs``' plain path (no events, no keep_done, one topic) keeps no set of the jobs it
settled when its XDEL deleted every entry named (no entry id named twice: no record's entry can
match two deliveries), and finds keyed job ids with one search of all the ids
(lua/ackJobs-6.lua); the outcome stays the one of one call per delivery."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def delivered(queue: sd.Queue, ids: list[str]) -> list[tuple[str, str, str]]:
    """Enqueue, promote and read jobs ``ids`` of topic ``a``: (topic, id, entry) each."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    call(c, "registerGroup", keys, ["g", "a"])
    queue.enqueue_many([sd.JobSpec("a", i, id=job) for i, job in enumerate(ids)])
    time.sleep(0.01)
    assert call(c, "promoteDue", keys, [1000])[0] == len(ids)
    [[_, entries]] = c.xreadgroup("g", "c", {keys.stream("a"): ">"}, count=1000)
    return [("a", f[b"id"].decode(), eid.decode()) for eid, f in entries]


def test_one_topic_naming_a_delivery_twice_settles_it_once(queue: sd.Queue) -> None:
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["j0", "j1", "j2"])
    flat = [*rows[1], *[v for row in rows for v in row]]  # j1's delivery first and again
    assert call(c, "ackJobs", keys, ["g", 0, len(flat) // 3, *flat, 0]) == 3
    assert c.hlen(keys.jobs) == 0 and c.xlen(keys.stream("a")) == 0


def test_a_stale_and_the_current_delivery_of_one_job_in_the_stream_settle_once(
    queue: sd.Queue,
) -> None:
    """Both entries exist, so XDEL deletes every entry named and no set is kept: the stale
    one is acknowledged and deleted, the job settled once, by its current delivery."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    [(topic, job, entry)] = delivered(queue, ["j0"])
    record = c.hget(keys.jobs, job)
    assert record is not None
    newer = c.xadd(keys.stream(topic), {"id": job, "rec": record}).decode()
    c.hset(keys.jobs, job, record.replace(entry.encode(), newer.encode()))
    c.xreadgroup("g", "c", {keys.stream(topic): ">"}, count=10)
    args = ["g", 0, 2, topic, job, entry, topic, job, newer, 0]
    assert call(c, "ackJobs", keys, args) == 1
    assert not c.hexists(keys.jobs, job) and c.xlen(keys.stream(topic)) == 0
    assert c.xpending(keys.stream(topic), "g")["pending"] == 0


def test_a_brace_inside_a_job_id_is_no_fairness_key(queue: sd.Queue) -> None:
    """The search of all the ids finds a '{' anywhere; only an id that starts with one has a
    key lease to free (the API refuses braces: a foreign caller's id here, with no record), and
    the batch settles as without the search."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["j0", "j1"])
    flat = [*rows[0], "a", "x{y}", "1-1", *rows[1]]
    assert call(c, "ackJobs", keys, ["g", 0, 3, *flat, 0]) == 2
    assert c.hlen(keys.jobs) == 0 and c.xlen(keys.stream("a")) == 0


def test_a_foreign_jobs_key_is_refused_before_any_write(queue: sd.Queue) -> None:
    """The jobs key is checked by the batch's HMGET: its refusal names the key as TYPE would."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    [row] = delivered(queue, ["j0"])
    c.rename(keys.jobs, keys.jobs + "-kept")
    c.set(keys.jobs, "foreign")
    with pytest.raises(sd.ScriptError, match="jobs holds a string"):
        call(c, "ackJobs", keys, ["g", 0, 1, *row, 0])
    assert c.xpending(keys.stream("a"), "g")["pending"] == 1 and c.xlen(keys.stream("a")) == 1


def test_a_held_jobs_delivery_refuses_a_foreign_delayed_key_before_any_write(
    queue: sd.Queue,
) -> None:
    """Settling the delivery a rescheduled job is held behind frees the job (delayed set,
    wake): those keys are refused before the first write, found before it too."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    [row] = delivered(queue, ["j0"])
    assert queue.reschedule("j0", delay=60) is True  # held behind its running delivery
    record = c.hget(keys.jobs, "j0")
    assert record is not None and record.startswith(b"d|")
    c.delete(keys.delayed)
    c.set(keys.delayed, "foreign")
    with pytest.raises(sd.ScriptError, match="delayed holds a string"):
        call(c, "ackJobs", keys, ["g", 0, 1, *row, 0])
    assert c.xpending(keys.stream("a"), "g")["pending"] == 1 and c.xlen(keys.stream("a")) == 1
    assert c.hget(keys.jobs, "j0") == record
    c.delete(keys.delayed)
    assert call(c, "ackJobs", keys, ["g", 0, 1, *row, 0]) == 0  # stale: the job is freed
    assert c.zscore(keys.delayed, "j0") is not None and c.xlen(keys.stream("a")) == 0


def test_a_plain_ack_checks_only_the_keys_it_writes(queue: sd.Queue) -> None:
    """Counts, wake and groups are written only by a held job's release or a workflow: a plain
    batch does not read their type (3 TYPE calls instead of 8 a call)."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["j0", "j1"])
    for key in (keys.counts, keys.wake, keys.groups):
        c.delete(key)
        c.set(key, "foreign")
    flat = [v for row in rows for v in row]
    assert call(c, "ackJobs", keys, ["g", 0, 2, *flat, 0]) == 2
    assert c.hlen(keys.jobs) == 0 and c.xlen(keys.stream("a")) == 0


def test_a_foreign_opts_key_does_not_fail_an_ack_after_its_first_writes(queue: sd.Queue) -> None:
    """includes/drop_opts.lua forgets the options of the jobs an ack settled after the ack's
    writes: a foreign value at the opts key (not a hash) is left alone there, as a foreign
    checkpoint key is, instead of failing the call half-written (docs/keys.md)."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    [(topic, job, entry)] = delivered(queue, ["j0"])
    c.set(f"{keys.prefix}opts", "foreign")
    assert call(c, "ackJobs", keys, ["g", 0, 1, topic, job, entry, 0]) == 1
    assert not c.hexists(keys.jobs, job) and c.xlen(keys.stream(topic)) == 0
    assert c.get(f"{keys.prefix}opts") == b"foreign"


def test_a_plain_call_settles_only_its_current_deliveries_and_in_order(queue: sd.Queue) -> None:
    """The plain call takes the jobs it settles from its first pass (no settle loop): a stale
    delivery among current ones (its job was replaced while it ran) leaves that job's record
    alone, and the reply counts the current ones only."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["j0", "j1", "j2", "j3"])
    _, stale_job, stale_entry = rows[2]
    record = c.hget(keys.jobs, stale_job)
    assert record is not None
    moved = record.replace(stale_entry.encode(), b"1-1")  # its current delivery is another
    c.hset(keys.jobs, stale_job, moved)
    flat = [v for row in rows for v in row]
    assert call(c, "ackJobs", keys, ["g", 0, len(flat) // 3, *flat, 0]) == 3
    assert c.hgetall(keys.jobs) == {stale_job.encode(): moved}
    assert c.xlen(keys.stream("a")) == 0
    assert c.xpending(keys.stream("a"), "g")["pending"] == 0
