"""Lifecycle events share stream entries (docs/events.md#entries): an enqueue_many, a promote
and an ack of many jobs write one entry per call (up to 100 events each), not one per job; the
reader still gives every event once, in order, resumes from a cursor inside an entry, and reads
the one-event entries of older releases."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.runner import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.promoting import promote_due_sync

pytestmark = pytest.mark.timeout(60)
N = 250  # jobs per call: three entries of at most 100 events


@pytest.fixture
def evq(redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """A queue with events on (one partition)."""
    q = sd.Queue(queue_name, url=redis_url, events=True)
    yield q
    q.close()


def run_batch(q: sd.Queue) -> None:
    """N jobs through enqueue_many, one promote and one ack of all N deliveries (one call each),
    with a group read (an XREADGROUP: ``started`` is dated by the ack from the pending list)."""
    keys = PartitionKeys(q.name, 0)

    def call(name: str, args: list[Any]) -> Any:
        return run_step_sync(q.client, script(name).call(keys.script_keys(), args))

    call("registerGroup", ["g", "t"])
    q.enqueue_many([sd.JobSpec("t", i, id=f"b{i}") for i in range(N)])
    assert promote_due_sync(q.client, keys, N) == N
    (_, entries), = q.client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=N)
    args: list[Any] = ["g", 0, N]
    for eid, fields in entries:
        args += ["t", fields[b"id"].decode(), eid.decode()]
    assert call("ackJobs", [*args, 0]) == N


def test_a_call_of_many_jobs_writes_few_entries_and_every_event_once(evq: sd.Queue) -> None:
    run_batch(evq)
    events = list(evq.events(follow=False))
    assert len(events) == 4 * N
    entries = evq.client.xlen(PartitionKeys(evq.name, 0).events)
    assert entries <= 4 * 3 + 4, entries  # per call and kind: ceil(250 / 100) entries
    by_job: dict[str, list[str]] = {}
    for event in events:
        by_job.setdefault(event.id, []).append(event.kind)
    assert by_job == {f"b{i}": ["enqueued", "promoted", "started", "succeeded"]
                      for i in range(N)}
    started = [e for e in events if e.kind == "started"]
    assert all(e.attempt == 1 and e.topic == "t" for e in started)
    assert all(s.at <= p.at + 1000 for s, p in zip(started, events[N:2 * N], strict=True))
    cursors = [e.cursor for e in events]
    assert len(set(cursors)) == len(cursors)
    assert sum("." in c for c in cursors) > 0  # positions inside an entry


def test_resume_from_inside_an_entry_gives_exactly_the_rest(evq: sd.Queue) -> None:
    run_batch(evq)
    events = list(evq.events(follow=False))
    for cut in (0, 1, 57, 99, 100, 101, 2 * N + 3, len(events) - 2):
        rest = list(evq.events(since=events[cut].cursor, follow=False))
        assert [(e.id, e.kind) for e in rest] == [(e.id, e.kind) for e in events[cut + 1:]]
        assert [e.cursor for e in rest] == [e.cursor for e in events[cut + 1:]]
    assert list(evq.events(since=events[-1].cursor, follow=False)) == []


def test_following_from_inside_an_entry_gets_new_events(evq: sd.Queue) -> None:
    evq.enqueue_many([sd.JobSpec("t", i, id=f"f{i}", delay=3600) for i in range(5)])
    events = list(evq.events(follow=False))
    follower = evq.events(since=events[2].cursor)
    assert [next(follower).id for _ in range(2)] == ["f3", "f4"]
    evq.enqueue("t", 9, id="later", delay=3600)
    assert next(follower).id == "later"


def test_an_old_single_event_entry_is_still_read(evq: sd.Queue) -> None:
    evq.enqueue_many([sd.JobSpec("t", i, id=f"n{i}", delay=3600) for i in range(3)])
    key = PartitionKeys(evq.name, 0).events
    now = int(time.time() * 1000)
    old = evq.client.xadd(key, {"k": "cancelled", "i": "old-one", "t": "legacy", "a": 2,
                                "at": now, "d": "delayed"}).decode()
    evq.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=3600) for i in range(3)])
    events = list(evq.events(follow=False))
    assert [e.id for e in events] == ["n0", "n1", "n2", "old-one", "m0", "m1", "m2"]
    legacy = events[3]
    assert (legacy.kind, legacy.topic, legacy.attempt, legacy.at, legacy.detail, legacy.cursor) \
        == ("cancelled", "legacy", 2, now, "delayed", old)
    assert [e.id for e in evq.events(since=old, follow=False)] == ["m0", "m1", "m2"]
    assert [e.id for e in evq.events(topic="legacy", follow=False)] == ["old-one"]


def test_details_and_times_that_differ_within_an_entry(evq: sd.Queue) -> None:
    evq.enqueue("t", 0, id="same", delay=3600)
    evq.enqueue_many([sd.JobSpec("t", 1, id="first", delay=3600),
                      sd.JobSpec("u", 2, id="other", delay=7200),
                      sd.JobSpec("t", 3, id="same", delay=10, replace=True)])
    events = list(evq.events(follow=False))[1:]
    assert [(e.id, e.topic) for e in events] == [("first", "t"), ("other", "u"), ("same", "t")]
    assert events[2].detail.endswith(" replaced") and not events[0].detail.endswith("replaced")
    assert int(events[1].detail) - int(events[0].detail) >= 3_600_000 - 50
    assert events[2].cursor.count(".") == 0 and events[0].cursor.endswith(".1")
    assert evq.client.xlen(PartitionKeys(evq.name, 0).events) == 2


def test_a_detail_with_a_line_break_keeps_its_place(evq: sd.Queue) -> None:
    """failJob writes ``started`` and ``retried`` together; an error of several lines is
    written in an entry of its own, after the events before it."""
    evq.enqueue("t", 1, id="multi", max_attempts=2)
    keys = PartitionKeys(evq.name, 0)
    run_step_sync(evq.client, script("registerGroup").call(keys.script_keys(), ["g", "t"]))
    promote_due_sync(evq.client, keys)
    (_, entries), = evq.client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=1)
    eid = entries[0][0].decode()
    run_step_sync(evq.client, script("failJob").call(
        keys.script_keys(), ["g", "t", "multi", eid, 0, 0, "line 1\nline 2", 0]))
    events = list(evq.events(follow=False))
    assert [e.kind for e in events] == ["enqueued", "promoted", "started", "retried"]
    assert events[3].detail == "line 1\nline 2" and events[3].attempt == 1


def read_fresh(q: sd.Queue, prefix: str, n: int) -> dict[str, str]:
    """``n`` jobs of topic ``t`` enqueued, promoted and read once by consumer ``c`` of group
    ``g`` (one XREADGROUP): job id -> its stream entry id."""
    keys = PartitionKeys(q.name, 0)
    run_step_sync(q.client, script("registerGroup").call(keys.script_keys(), ["g", "t"]))
    q.enqueue_many([sd.JobSpec("t", i, id=f"{prefix}{i}") for i in range(n)])
    promote_due_sync(q.client, keys, n)
    (_, entries), = q.client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=n)
    return {fields[b"id"].decode(): e.decode() for e, fields in entries}


def test_a_job_named_twice_in_a_settle_reports_started_and_succeeded_once(evq: sd.Queue) -> None:
    """ackJobs with events on parses each record once: a job named first with a stale entry
    id and then with its current one settles by the current one, a delivery named twice counts
    once, a cancelled job's delivery writes nothing; each settled job gets one ``started`` and
    one ``succeeded``."""
    keys = PartitionKeys(evq.name, 0)
    eid = read_fresh(evq, "j", 3)
    evq.cancel("j2")
    args: list[Any] = ["g", 0, 5, "t", "j0", eid["j1"], "t", "j0", eid["j0"], "t", "j0", eid["j0"],
                       "t", "j1", eid["j1"], "t", "j2", eid["j2"], 0]
    assert run_step_sync(evq.client, script("ackJobs").call(keys.script_keys(), args)) == 2
    kinds: dict[str, list[str]] = {}
    for event in evq.events(follow=False):
        kinds.setdefault(event.id, []).append(event.kind)
    assert kinds == {"j0": ["enqueued", "promoted", "started", "succeeded"],
                     "j1": ["enqueued", "promoted", "started", "succeeded"],
                     "j2": ["enqueued", "promoted", "cancelled"]}
    assert evq.client.hlen(keys.jobs) == 0


def test_a_settle_with_read_times_dates_started_by_them(evq: sd.Queue) -> None:
    """ackJobs: deliveries with a read time (given as runs: count, time) get ``started`` at
    that time; one without (0) is dated from the pending list, as when none is given (R = 0);
    runs that do not add up to the deliveries are refused before any write."""
    keys = PartitionKeys(evq.name, 0)
    eid = read_fresh(evq, "r", 4)
    read_at = int(eid["r0"].split("-")[0]) + 1
    deliveries: list[Any] = ["g", 0, 4]
    for n in range(4):
        deliveries += ["t", f"r{n}", eid[f"r{n}"]]
    for runs in ([3, 1, 12345, 1, 0, 1, read_at], [2, 1, 12345, 2, read_at],  # 3 of 4
                 [1, 4, "x"], [1, 0, read_at], [1, 1.5, read_at], ["x", 1, 2, 3]):
        with pytest.raises(Exception, match="BAD_ARGS ackJobs"):
            run_step_sync(evq.client, script("ackJobs").call(keys.script_keys(),
                                                              deliveries + runs))
    assert evq.client.hlen(keys.jobs) == 4
    args = [*deliveries, 3, 1, 12345, 1, 0, 2, read_at]
    assert run_step_sync(evq.client, script("ackJobs").call(keys.script_keys(), args)) == 4
    started = {e.id: e.at for e in evq.events(follow=False) if e.kind == "started"}
    assert started["r0"] == 12345 and started["r2"] == started["r3"] == read_at
    assert abs(started["r1"] - read_at) < 1000  # from the pending list: when c read it
    bad = ["g", 0, 1, "t", "r0", eid["r0"]]  # without R (the count of read-time runs)
    with pytest.raises(Exception, match="BAD_ARGS ackJobs"):
        run_step_sync(evq.client, script("ackJobs").call(keys.script_keys(), bad))
