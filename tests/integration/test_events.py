"""Lifecycle events (docs/events.md): every transition's script writes its event when the queue
has events on, nothing when off; the stream stays bounded; ``events`` merges the partitions by
time, follows them (sync and async) and resumes from a cursor."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys, partition_keys
from streamdelay.protocol.scripts import script
from tests.integration.test_pull import promote
from tests.system import test_docs_examples as docs_examples

pytestmark = pytest.mark.timeout(60)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example


@pytest.fixture
def evq(redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """A queue with events on (one partition), short backoff."""
    q = sd.Queue(queue_name, url=redis_url, events=True, backoff=[0.0], max_attempts=2)
    yield q
    q.close()


def kinds(q: sd.Queue, job_id: str | None = None) -> list[str]:
    """The kinds of the events kept (of one job when given), oldest first."""
    return [e.kind for e in q.events(follow=False) if job_id is None or e.id == job_id]


def drain(q: sd.Queue, handler: Any, topic: str = "t") -> None:
    """Serve ``topic`` until idle with ``handler``."""
    worker = sd.Worker(q, concurrency=1)
    worker.handler(topic)(handler)
    worker.run(until_idle=True)


def test_each_transition_writes_its_event(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="ok")
    evq.enqueue("t", {"n": 2}, id="bad")
    evq.enqueue("t", {"n": 3}, id="gone", delay=3600)
    assert evq.cancel("gone")

    def handler(job: sd.Job) -> None:
        if job.id == "bad":
            raise RuntimeError("boom")

    drain(evq, handler)
    assert kinds(evq, "ok") == ["enqueued", "promoted", "started", "succeeded"]
    assert kinds(evq, "bad") == ["enqueued", "promoted", "started", "retried", "promoted",
                                 "started", "dead"]
    assert kinds(evq, "gone") == ["enqueued", "cancelled"]
    events = {(e.id, e.kind, e.attempt): e for e in evq.events(follow=False)}
    assert "boom" in events["bad", "retried", 1].detail
    # promoted carries the attempts made so far: 0, then 1 for the retry (promoteDue reads
    # them without a pattern for a job never run, with one otherwise)
    assert ("bad", "promoted", 0) in events and ("bad", "promoted", 1) in events
    assert "boom" in events["bad", "dead", 2].detail
    assert events["gone", "cancelled", 0].detail == "delayed"
    assert events["ok", "started", 1].at <= events["ok", "succeeded", 1].at
    assert events["ok", "enqueued", 0].topic == "t"
    assert int(events["gone", "enqueued", 0].detail) > events["gone", "enqueued", 0].at
    assert evq.dead_replay("t") == 1
    assert kinds(evq, "bad")[-1] == "enqueued"


def test_off_writes_nothing(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="a")
    drain(queue, lambda job: None)
    assert queue.cancel("a") is False
    assert not queue.client.exists(PartitionKeys(queue.name, 0).events)
    assert list(queue.events(follow=False)) == []


def test_switch_lives_in_meta_and_false_turns_it_off(evq: sd.Queue, redis_url: str) -> None:
    evq.enqueue("t", 1, id="a")
    keys = PartitionKeys(evq.name, 0)
    assert evq.client.hget(keys.meta, "events") == b"10000"
    with sd.Queue(evq.name, url=redis_url, events=False) as off:
        off.enqueue("t", 1, id="b")
    assert evq.client.hget(keys.meta, "events") == b"0"
    with sd.Queue(evq.name, url=redis_url) as plain:  # None: leaves the switch alone
        plain.enqueue("t", 1, id="c")
    assert [e.id for e in evq.events(follow=False)] == ["a"]


def test_started_is_reported_once_by_the_first_heartbeat(evq: sd.Queue) -> None:
    """A take is an XREADGROUP (no script): the first heartbeat reports ``started`` with the
    time the consumer read the job; the settle does not report it again."""
    evq.enqueue("t", 1, id="long")
    keys = PartitionKeys(evq.name, 0)
    client = evq.client

    def call(name: str, args: list[Any]) -> Any:
        return run_step_sync(client, script(name).call(keys.script_keys(), args))

    call("registerGroup", ["g", "t"])
    time.sleep(0.005)
    call("promoteDue", [100])
    read_at = int(client.time()[0]) * 1000 + int(client.time()[1]) // 1000
    (_, entries), = client.xreadgroup("g", "c", {keys.stream("t"): ">"}, count=1)
    eid = entries[0][0].decode()
    time.sleep(0.3)
    call("touchJobs", ["g", "c", 1, "t", eid])
    call("touchJobs", ["g", "c", 1, "t", eid])
    assert call("ackJobs", ["g", 0, 1, "t", "long", eid, 0]) == 1
    events = [e for e in evq.events(follow=False) if e.id == "long"]
    assert [e.kind for e in events] == ["enqueued", "promoted", "started", "succeeded"]
    started = events[2]
    assert abs(started.at - read_at) < 100, (started.at, read_at)
    assert started.attempt == 1 and events[3].at - started.at >= 250


def test_reserve_path_reports_started_and_outcome(evq: sd.Queue) -> None:
    evq.reserve("t")  # registers the group
    evq.enqueue("t", 1, id="r")
    promote(evq)
    (job,) = evq.reserve("t")
    job.ack()
    assert kinds(evq, "r") == ["enqueued", "promoted", "started", "succeeded"]


def test_bound_holds(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True, events_maxlen=100) as q:
        for i in range(300):  # one entry per call
            q.enqueue("t", i, id=f"j{i}", delay=3600)
        length = q.client.xlen(PartitionKeys(queue_name, 0).events)
        assert 100 <= length <= 200, length  # MAXLEN ~ trims whole stream nodes (100 entries)
        kept = list(q.events(follow=False))
        assert kept[-1].id == "j299" and len(kept) == length
        for start in range(0, 3000, 500):  # entries of up to 100 events each (docs/events.md)
            q.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=3600)
                            for i in range(start, start + 500)])
        length = q.client.xlen(PartitionKeys(queue_name, 0).events)
        assert 100 <= length <= 200, length
        kept = list(q.events(follow=False))
        assert kept[-1].id == "m2999" and length <= len(kept) <= 100 * length


def test_follow_merges_partitions_and_resumes_from_a_cursor(redis_url: str,
                                                            queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True, partitions=4) as q:
        q.enqueue("t", 0, id="first", delay=3600)
        seen: list[sd.JobEvent] = []
        done = threading.Event()

        def follow() -> None:
            for event in q.events(topic="t"):
                seen.append(event)
                if len(seen) == 21:
                    done.set()
                    return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        time.sleep(0.3)  # the follower is blocked in XREAD now
        ids = [f"job-{i}" for i in range(20)]
        for job_id in ids:
            q.enqueue("t", 0, id=job_id, delay=3600)
            q.enqueue("other", 0, id=f"o-{job_id}", delay=3600)
        assert done.wait(10), len(seen)
        assert sorted(e.id for e in seen) == sorted(["first", *ids])
        assert len({e.partition for e in seen}) > 1
        # merged by the time each event was written (the ms of its entry id; within one ms a
        # live follow gives them as they arrive); `at` is taken at the script's start
        written = [int(e.cursor.split(",")[e.partition].split("-")[0]) for e in seen]
        assert written == sorted(written), written
        # the partitions merged by time (one ms: partition order); a cursor resumes right after
        merged = list(q.events(topic="t", follow=False))
        assert sorted(e.id for e in merged) == sorted(e.id for e in seen)
        for k in (0, 4, 19):
            rest = [e.id for e in q.events(topic="t", since=merged[k].cursor, follow=False)]
            assert rest == [e.id for e in merged[k + 1:]]
        # by time: every event at or after that ms
        later = [e.id for e in q.events(topic="t", since=merged[10].at, follow=False)]
        assert later == [e.id for e in merged if e.at >= merged[10].at]


def test_async_follow(redis_url: str, queue_name: str) -> None:
    async def main() -> list[str]:
        async with sd.AsyncQueue(queue_name, url=redis_url, events=True, partitions=3) as q:
            await q.enqueue("t", 0, id="a0", delay=3600)
            got: list[str] = []

            async def follow() -> None:
                async for event in q.events():
                    got.append(event.id)
                    if len(got) == 6:
                        return

            task = asyncio.ensure_future(follow())
            await asyncio.sleep(0.2)
            for i in range(1, 6):
                await q.enqueue("t", 0, id=f"a{i}", delay=3600)
            await asyncio.wait_for(task, 10)
            return got

    got = asyncio.run(main())
    # every event once; a0 (written 0.2 s before the others) first. Two enqueues that land in
    # the same millisecond on different partitions and come back in one XREAD are merged in
    # partition order (docs/events.md#reading), which need not be the order they were sent in
    assert got[0] == "a0" and sorted(got) == [f"a{i}" for i in range(6)]


def test_bad_since_names_the_field(evq: sd.Queue) -> None:
    for bad in ("nope", "1-0,2-0", -5, 1.5):
        with pytest.raises(sd.ValidationError, match="since"):
            evq.events(since=bad)
    with pytest.raises(sd.ValidationError, match="events_maxlen"):
        sd.Queue("x", events=True, events_maxlen=0)


def test_foreign_value_at_the_events_key_never_blocks_a_transition(evq: sd.Queue) -> None:
    evq.enqueue("t", 1, id="a")
    key = PartitionKeys(evq.name, 0).events
    evq.client.delete(key)
    evq.client.set(key, "garbage")
    evq.enqueue("t", 1, id="b")
    drain(evq, lambda job: None)
    assert evq.get("b") is None
    assert isinstance(partition_keys(evq.name, 1), tuple)
    assert evq.client.get(key) == b"garbage"
    redis.Redis  # noqa: B018  (the module's client type, kept for readers)


def test_events_example(example_env: dict[str, str]) -> None:
    """docs/examples/events.py, the example of docs/events.md, runs and prints each history."""
    lines = run_example("events.py", example_env).splitlines()
    assert lines[:2] == ["parcel-7 enqueued promoted started succeeded",
                         "parcel-8 enqueued promoted started dead"]
    assert lines[2].startswith("next: parcel-9 enqueued ") and len(lines) == 3


def test_a_worker_dates_started_by_its_read_without_the_pending_list(evq: sd.Queue) -> None:
    """A Worker of a queue with events on reads the server clock with each read and sends it
    with the settle (ackJobs): ``started`` is at the read time, and no settle reads the
    pending list (its only ``XPENDING`` is the look at its own list, ``- +``); a job whose
    heartbeat ran gets its ``started`` from the heartbeat, once (docs/events.md#started)."""
    client = evq.client
    evq.enqueue_many([sd.JobSpec("t", i, id=f"q{i}") for i in range(40)])
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 100_000)
    client.slowlog_reset()
    worker = sd.Worker(evq, concurrency=8)
    worker.handler("t")(lambda job: None)
    worker.run(until_idle=True)
    commands = [bytes(e["command"]).split() for e in client.slowlog_get(100_000)]
    ranged = [c for c in commands if c[0].upper() == b"XPENDING" and c[3:4] != [b"-"]]
    assert any(c[0].upper() == b"EVALSHA" for c in commands) and not ranged, ranged
    client.config_set("slowlog-log-slower-than", 10_000)
    evq.enqueue("slow", 1, id="slow", ttr=1.0)
    time.sleep(0.01)  # due at the next ms: the until_idle check must see it
    worker = sd.Worker(evq, concurrency=8)
    worker.handler("slow")(lambda job: time.sleep(0.8))  # touched after a third of its ttr
    worker.run(until_idle=True)
    by_job: dict[str, list[sd.JobEvent]] = {}
    for event in evq.events(follow=False):
        by_job.setdefault(event.id, []).append(event)
    assert set(by_job) == {f"q{i}" for i in range(40)} | {"slow"}
    for job_id, events in by_job.items():
        assert [e.kind for e in events] == ["enqueued", "promoted", "started", "succeeded"], \
            job_id
        promoted, started, succeeded = events[1:]
        assert promoted.at <= started.at <= succeeded.at, job_id
    slow = by_job["slow"]
    assert slow[3].at - slow[2].at >= 700  # started when read, not when the heartbeat ran
