"""Staged topics (docs/priorities.md): due jobs wait in per-key lanes; higher priorities start
first within a lane and a waiting job gains a level per ``priority_aging``; lanes take turns
(a new key's first job starts within one turn of a hot key's backlog); key limits hold in the
take itself (nothing over a limit is taken, no attempt spent); get, cancel and reschedule find
a job waiting in a lane. Real redis-server; takes through ``q.reserve`` (the engine's take every
driver shares: tests/integration/test_consumer_drivers.py runs the Worker too)."""

from __future__ import annotations

import time

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.integration.test_pull import promote, running_dispatcher
from tests.support.staged import enqueue_staged, job_id

pytestmark = pytest.mark.timeout(60)
T = "tenant.job"


def take_one_by_one(q: sd.Queue, limit: int = 1000, ack: bool = True) -> list[str]:
    """Reserve one job at a time (acknowledging each) until none is ready: the ids in the
    order they were taken."""
    taken: list[str] = []
    while len(taken) < limit:
        got = q.reserve(T, group="g", consumer="c", count=1)
        if not got:
            return taken
        taken.append(got[0].id)
        if ack:
            got[0].ack()
    return taken


def server_ms(q: sd.Queue) -> int:
    seconds, micros = redis.Redis.from_url(q.config.url).time()
    return seconds * 1000 + micros // 1000


def test_higher_priorities_start_first_and_equal_ones_keep_their_order(queue: sd.Queue) -> None:
    at = server_ms(queue) - 1000  # all due at the same ms: only the priority tells them apart
    enqueue_staged(queue, T, [("a", 5, None), ("b", 9, None), ("c", 1, None), ("d", 9, None),
                              ("e", 5, None), ("f", 0, None)], at_ms=at)
    promote(queue, 6)
    row = queue.stats().topics[T]
    assert (row.staged, row.ready, row.delayed) == (True, 6, 0)
    assert take_one_by_one(queue) == ["b", "d", "a", "e", "c", "f"]
    assert queue.stats().topics[T].ready == 0


@pytest.mark.parametrize(("aging", "first"), [(None, "new"), (1.0, "old")])
def test_a_waiting_job_gains_a_level_per_priority_aging(redis_url: str, queue_name: str,
                                                        aging: float | None, first: str) -> None:
    """``old`` (priority 1) waited 5 s longer than ``new`` (priority 5): with the default
    aging (10 s a level) that is half a level, and ``new`` goes first; with 1 s a level it is
    5 levels, more than the 4 between them, and ``old`` goes first."""
    q = sd.Queue(queue_name, url=redis_url, priority_aging=aging)
    now = server_ms(q)
    enqueue_staged(q, T, [("old", 1, None)], at_ms=now - 10_000)
    enqueue_staged(q, T, [("new", 5, None)], at_ms=now - 5_000)
    with running_dispatcher(q):  # writes the aging to Redis, then promotes
        deadline = time.monotonic() + 10
        while q.stats().topics[T].ready < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert take_one_by_one(q)[0] == first
    q.close()


def test_keys_take_turns_so_a_new_key_starts_within_one_turn_of_a_hot_backlog(
        queue: sd.Queue) -> None:
    at = server_ms(queue) - 60_000
    hot = enqueue_staged(queue, T, [(f"h{i:03}", 5, "hot") for i in range(60)], at_ms=at)
    promote(queue, 60)
    first = take_one_by_one(queue, limit=3)  # the hot key alone: it runs
    assert first == hot[:3]
    late = enqueue_staged(queue, T, [(f"n{i}", 5, f"new{i}") for i in range(5)]
                          + [("plain", 5, None)])
    promote(queue, 6)
    order = take_one_by_one(queue)
    lanes = 1 + 5 + 1  # the hot key, 5 new keys, the jobs without a key
    assert sorted(order.index(jid) for jid in late) == list(range(1, lanes))  # one turn
    assert [jid for jid in order if jid in hot] == hot[3:]  # the hot key keeps its order
    row = queue.stats().topics[T]
    assert (row.ready, row.keys) == (0, ())


def test_stats_show_the_keys_with_the_most_ready_jobs(queue: sd.Queue) -> None:
    enqueue_staged(queue, T, [(f"a{i}", 5, "acme") for i in range(4)]
                   + [(f"b{i}", 5, "bolt") for i in range(2)] + [("p", 5, None)])
    promote(queue, 7)
    row = queue.stats().topics[T]
    assert row.ready == 7 and row.keys == (("acme", 4), ("bolt", 2), ("", 1))


def test_a_key_concurrency_limit_holds_in_the_take_and_spends_no_attempt(
        queue: sd.Queue) -> None:
    queue.limit(T, key_concurrency=2)
    assert queue.limits()[T].key_concurrency == 2
    enqueue_staged(queue, T, [(f"a{i}", 5, "acme") for i in range(5)]
                   + [(f"b{i}", 5, "bolt") for i in range(1)])
    promote(queue, 6)
    got = queue.reserve(T, group="g", consumer="c", count=10)
    assert sorted(r.id for r in got) == sorted(
        [job_id("a0", "acme"), job_id("a1", "acme"), job_id("b0", "bolt")])
    assert queue.reserve(T, group="g", consumer="c", count=10) == []  # acme is full
    assert queue.stats().topics[T].key_concurrency == 2
    next(r for r in got if r.id == job_id("a0", "acme")).ack()  # frees one lease of acme
    [again] = queue.reserve(T, group="g", consumer="c", count=10)
    assert again.id == job_id("a2", "acme") and again.attempt == 1  # no attempt was spent


def test_a_key_lease_lapses_one_ttr_after_its_holder_went_silent(queue: sd.Queue) -> None:
    queue.limit(T, key_concurrency=1)
    enqueue_staged(queue, T, [("x0", 5, "k"), ("x1", 5, "k")], ttr_ms=1000)
    promote(queue, 2)
    [held] = queue.reserve(T, group="g", consumer="gone", count=5)  # never settled
    assert held.id == job_id("x0", "k")
    assert queue.reserve(T, group="g", consumer="c", count=5) == []
    deadline = time.monotonic() + 10
    got: list[sd.Reservation] = []
    while not got:  # the holder is silent: its lease counts until idle past the ttr
        assert time.monotonic() < deadline
        got = queue.reserve(T, group="g", consumer="c", count=5, wait=0.2)
    assert got[0].id in (job_id("x0", "k"), job_id("x1", "k"))


def test_a_key_rate_holds_each_key_to_its_own_bucket(queue: sd.Queue) -> None:
    queue.limit(T, key_rate="2/h")
    enqueue_staged(queue, T, [(f"a{i}", 5, "acme") for i in range(4)]
                   + [(f"b{i}", 5, "bolt") for i in range(4)])
    promote(queue, 8)
    got = queue.reserve(T, group="g", consumer="c", count=20)
    assert sorted(r.id for r in got) == sorted(
        job_id(n, k) for n, k in [("a0", "acme"), ("a1", "acme"), ("b0", "bolt"),
                                  ("b1", "bolt")])
    assert queue.stats().topics[T].ready == 4  # the rest wait, ready, no attempt spent


def test_get_cancel_and_reschedule_find_a_job_waiting_in_its_lane(queue: sd.Queue) -> None:
    enqueue_staged(queue, T, [("r1", 7, None), ("r2", 5, None), ("r3", 3, None)])
    promote(queue, 3)
    info = queue.get("r1")
    assert info is not None and info.state == "ready"
    assert queue.cancel("r2") and queue.get("r2") is None
    assert queue.reschedule("r3", delay=3600)
    info3 = queue.get("r3")
    assert info3 is not None and info3.state == "delayed"
    row = queue.stats().topics[T]
    assert (row.ready, row.delayed) == (1, 1)
    assert queue.reschedule("r3", delay=0)
    promote(queue, 1)
    assert take_one_by_one(queue) == ["r1", "r3"]
    client = redis.Redis.from_url(queue.config.url)
    keys = PartitionKeys(queue.name, 0)
    assert not client.exists(keys.lane(T, ""), keys.lanes(T), keys.backlog(T))  # nothing left


def test_jobs_in_the_stream_before_the_topic_was_staged_are_taken_first(
        queue: sd.Queue) -> None:
    queue.enqueue(T, {"n": 0}, id="plain-early")
    promote(queue, 1)  # in the stream: the topic is not staged yet
    enqueue_staged(queue, T, [("staged-later", 9, None)])
    promote(queue, 1)
    assert take_one_by_one(queue) == ["plain-early", "staged-later"]


def test_a_job_past_its_deadline_in_its_lane_is_not_taken_but_expired(queue: sd.Queue) -> None:
    """docs/expiry.md at the staged take: no attempt spent, dead with the error ``expired``."""
    late = queue.enqueue(T, {"n": 1}, id="late", key="acme", expires=0.2).id
    ok = queue.enqueue(T, {"n": 2}, id="ok", key="acme", expires=600).id
    promote(queue, 2)
    time.sleep(0.4)  # the deadline of late passes while it waits in its lane
    got = queue.reserve(T, group="g", consumer="c", count=10)
    assert [r.id for r in got] == [ok]
    assert {d.id: (d.error, d.attempts) for d in queue.dead_list(T)} == {late: ("expired", 0)}
    assert queue.stats().topics[T].ready == 0


def test_a_take_past_undelivered_entries_delivers_only_what_it_leased(queue: sd.Queue) -> None:
    """Entries handed back (or reclaimed) wait undelivered in the stream; a take whose first
    read sends one back to its lane (its key full) and takes a job from a lane must deliver
    that job, not the next undelivered entry of another key, which would run without a lease
    beside a second run of its key (docs/limits.md#key-limits)."""
    enqueue_staged(queue, T, [("a1", 5, "a"), ("a2", 5, "a"), ("b1", 5, "b"), ("c1", 5, "c")])
    promote(queue, 4)
    first = {r.id: r for r in queue.reserve(T, group="g", consumer="y", count=4)}
    assert len(first) == 4  # no key limit yet
    for name, key in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("c1", "c")]:
        first[job_id(name, key)].release()  # undelivered again, in this order
    queue.limit(T, key_concurrency=1)
    [held] = queue.reserve(T, group="g", consumer="z", count=1)  # a1: key a is full now
    assert held.id == job_id("a1", "a")
    enqueue_staged(queue, T, [("e1", 5, "e"), ("c2", 5, "c")])
    promote(queue, 2)
    # a2 goes back to its lane (a is full), b1 is taken: then c1, never an unleased one
    got = queue.reserve(T, group="g", consumer="x", count=2)
    others = queue.reserve(T, group="g", consumer="w", count=10)
    running = [r.id for r in [held, *got, *others]]
    keys = [i[1:i.index("}")] for i in running]
    assert len(keys) == len(set(keys)), running  # never two of a key at once
