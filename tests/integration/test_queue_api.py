"""The producer and operator API, sync ``Queue`` and async ``AsyncQueue`` (same behaviour).

Every test that takes ``make_queue`` runs twice: once on ``sd.Queue`` and once on
``sd.AsyncQueue`` driven through ``asyncio.run``. Jobs are put in each state for real:
"ready" by a dispatcher's ``promote_once``, "reserved" by a plain XREADGROUP, "dead" and
"done" by a real ``Worker``.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.client.enqueuing import ENQUEUE_BATCH
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(60)
STATES = ("delayed", "ready", "reserved", "dead", "done")


class AsyncFace:
    """An ``AsyncQueue`` usable from plain test code: each method call runs in its own
    ``asyncio.run`` on a fresh ``AsyncQueue`` (redis.asyncio connections belong to one loop)."""

    def __init__(self, name: str, url: str, **options: Any) -> None:
        self.name, self.url, self.options = name, url, options
        self.config = sd.AsyncQueue(name, url=url, **options).config
        self.client = redis.Redis.from_url(url, protocol=2)

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method.startswith("_"):
            raise AttributeError(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            async def run() -> Any:
                async with sd.AsyncQueue(self.name, url=self.url, **self.options) as q:
                    return await getattr(q, method)(*args, **kwargs)

            return asyncio.run(run())

        return call

    def close(self) -> None:
        """Close the check client."""
        self.client.close()


Face = Any  # sd.Queue or AsyncFace: the same methods


@pytest.fixture(params=["sync", "async"])
def make_queue(request: pytest.FixtureRequest, redis_url: str,
               queue_name: str) -> Iterator[Callable[..., Face]]:
    """Build queues (fresh names) of the parametrized face; extra options go to the queue."""
    made: list[Any] = []

    def make(**options: Any) -> Face:
        name = f"{queue_name}x{len(made)}"
        face: Any = (sd.Queue(name, url=redis_url, **options) if request.param == "sync"
                     else AsyncFace(name, redis_url, **options))
        made.append(face)
        return face

    yield make
    for face in made:
        face.close()


# --- helpers: real state changes -----------------------------------------------------------

def server_ms(client: redis.Redis) -> int:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def keys_of(q: Face, job_id: str = "x") -> PartitionKeys:
    """The partition keys holding ``job_id``."""
    return PartitionKeys(q.config.name, partition_of(job_id, q.config.partitions))


def promote(q: Face) -> int:
    """Move every due job into its stream with one real dispatcher (no loop, no worker).

    A job enqueued with no delay is due at the next whole ms of the server clock
    (tests/support/promoting.py), so the clock is let past the ms of the call first."""
    start = server_ms(q.client)
    while server_ms(q.client) <= start:
        time.sleep(0.0005)

    async def run() -> int:
        dispatcher = sd.Dispatcher(q.config)
        try:
            for p in range(q.config.partitions):
                while (await dispatcher.promote_once(PartitionKeys(q.config.name, p))).moved:
                    pass
            return dispatcher.promoted
        finally:
            await dispatcher.close()

    return asyncio.run(run())


def register_group(q: Face, *topics: str, group: str = "workers") -> None:
    """Bind ``topics`` to ``group`` and create the consumer groups, as a worker would."""
    worker = sd.Worker(q.config, group=group, dispatch=False)
    for topic in topics:
        worker.handler(topic)(lambda job: None)

    async def run() -> None:
        try:
            await worker.register()
        finally:
            await worker.client.aclose()

    asyncio.run(run())


def reserve(q: Face, topic: str, consumer: str = "c1", group: str = "workers") -> list[str]:
    """Read the topic's ready entries as ``consumer`` (plain XREADGROUP): they become reserved."""
    stream = keys_of(q).stream(topic)
    reply = q.client.xreadgroup(group, consumer, {stream: ">"}, count=100)
    return [fields[b"id"].decode() for _, entries in reply for _, fields in entries]


def run_worker(q: Face, topic: str, handler: Callable[[sd.Job], Any]) -> sd.Worker:
    """Run a real worker on ``topic`` until nothing is left to do."""
    worker = sd.Worker(q.config, block=0.05)
    worker.handler(topic)(handler)
    worker.run(until_idle=True)
    return worker


def fail(job: sd.Job) -> None:
    """A handler that always fails."""
    raise RuntimeError(f"boom {job.id}")


def put_in_state(q: Face, state: str, job_id: str, topic: str = "t", body: Any = None) -> None:
    """Enqueue ``job_id`` and bring it into ``state`` by real means."""
    body = {"job": job_id} if body is None else body
    if state == "delayed":
        q.enqueue(topic, body, id=job_id, delay=600)
        return
    q.enqueue(topic, body, id=job_id, max_attempts=1)
    if state in ("dead", "done"):
        run_worker(q, topic, fail if state == "dead" else (lambda job: None))
        return
    if state == "reserved":
        register_group(q, topic)
    assert promote(q) == 1
    if state == "reserved":
        assert reserve(q, topic) == [job_id]


def where(q: Face, topic: str = "t") -> dict[str, int]:
    """Where jobs are in Redis, counted from the keys themselves."""
    keys, c = keys_of(q), q.client
    pending = 0
    if c.exists(keys.stream(topic)) and c.xinfo_groups(keys.stream(topic)):
        pending = int(c.xpending(keys.stream(topic), "workers")["pending"])
    return {"records": c.hlen(keys.jobs), "delayed": c.zcard(keys.delayed),
            "stream": c.xlen(keys.stream(topic)), "pending": pending,
            "dead": c.xlen(keys.dead(topic)), "tombstones": c.zcard(keys.done)}


# --- enqueue ---------------------------------------------------------------------------------

def test_enqueue_stores_every_option(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    before = server_ms(q.client)
    r = q.enqueue("order.close", {"order_id": 42}, delay=timedelta(seconds=30), id="close-42",
                  ttr=90, max_attempts=5, backoff=[0, 120], headers={"trace": "abc"})
    after = server_ms(q.client)
    assert (r.id, r.created, r.state) == ("close-42", True, "delayed")
    assert before + 30_000 <= r.due <= after + 30_001  # rounded up to the next ms
    info = q.get("close-42")
    assert info is not None
    assert (info.topic, info.state, info.due, info.attempts) == ("order.close", "delayed", r.due, 0)
    assert (info.ttr, info.max_attempts, info.headers) == (90.0, 5, {"trace": "abc"})
    assert info.body == {"order_id": 42}
    assert before <= info.created <= after + 1  # rounded up to the ms


def test_enqueue_defaults_and_generated_ids(make_queue: Callable[..., Face]) -> None:
    q = make_queue(ttr=7, max_attempts=3)
    first, second = q.enqueue("t"), q.enqueue("t", b"\x00raw")
    assert first.id != second.id and len(first.id) == 16 and first.created
    info = q.get(second.id)
    assert info is not None and info.body == b"\x00raw"
    assert (info.ttr, info.max_attempts) == (7.0, 3)


def test_at_accepts_aware_datetime_and_epoch_seconds(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    now = server_ms(q.client) / 1000
    when = datetime.fromtimestamp(now + 120.0005, tz=timezone(timedelta(hours=5)))
    by_datetime = q.enqueue("t", id="dt", at=when)
    by_epoch = q.enqueue("t", id="ep", at=now + 60.25)
    assert by_datetime.due == math.ceil(when.timestamp() * 1000)
    assert by_epoch.due == math.ceil((now + 60.25) * 1000)
    assert q.get("ep").due == by_epoch.due  # type: ignore[union-attr]


def test_due_comes_from_the_server_clock_not_the_client(
    make_queue: Callable[..., Face], monkeypatch: pytest.MonkeyPatch
) -> None:
    q = make_queue()
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3 * 3600)  # a client 3 h ahead
    before = server_ms(q.client)
    r = q.enqueue("t", id="skewed", delay=10)
    after = server_ms(q.client)
    assert before + 10_000 <= r.due <= after + 10_001  # rounded up to the next ms
    info = q.get("skewed")
    assert info is not None and before <= info.created <= after + 1  # rounded up to the ms


def test_at_within_past_tolerance_runs_now(make_queue: Callable[..., Face]) -> None:
    q = make_queue(past_tolerance=60)
    at = (server_ms(q.client) - 30_000) / 1000
    r = q.enqueue("t", id="late", at=at)
    assert r.created and r.due == math.ceil(at * 1000) < server_ms(q.client)
    assert promote(q) == 1
    assert q.get("late").state == "ready"  # type: ignore[union-attr]


def test_at_beyond_past_tolerance_is_refused_and_nothing_is_written(
    make_queue: Callable[..., Face]
) -> None:
    q = make_queue(past_tolerance=5)
    q.enqueue("t", id="existing", delay=60)
    dbsize, record = q.client.dbsize(), q.client.hgetall(keys_of(q).jobs)
    at = (server_ms(q.client) - 60_000) / 1000
    with pytest.raises(sd.ValidationError, match=r"^at: ") as caught:
        q.enqueue("t", id="too-late", at=at)
    assert caught.value.field == "at"
    specs = [sd.JobSpec("t", i, id=f"ok{i}", delay=1) for i in range(3 * ENQUEUE_BATCH)]
    specs.insert(2 * ENQUEUE_BATCH + 5, sd.JobSpec("t", "late", id="too-late-2", at=at))
    with pytest.raises(sd.ValidationError, match=r"^at: "):
        q.enqueue_many(specs)
    with pytest.raises(sd.ValidationError, match=r"^at: "):
        q.reschedule("existing", at=at)
    assert q.client.dbsize() == dbsize
    assert q.client.hgetall(keys_of(q).jobs) == record


# --- enqueue_many ----------------------------------------------------------------------------

def test_enqueue_many_gives_results_in_order_over_several_script_calls(
    make_queue: Callable[..., Face]
) -> None:
    q = make_queue()
    n = 600  # 5 bounded script calls
    delays = [(i * 7919) % 101 + 1 for i in range(n)]
    specs = [sd.JobSpec("t", {"i": i}, delay=d, id=f"m{i}") for i, d in enumerate(delays)]
    q.client.script_load(script("enqueueJobs").source)  # no NOSCRIPT round in the count
    calls = int(q.client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))
    before = server_ms(q.client)
    results = q.enqueue_many(specs)
    after = server_ms(q.client)
    calls = int(q.client.info("commandstats")["cmdstat_evalsha"]["calls"]) - calls
    assert calls == math.ceil(n / ENQUEUE_BATCH)
    assert [r.id for r in results] == [s.id for s in specs]
    assert all(r.created and r.state == "delayed" for r in results)
    for r, d in zip(results, delays, strict=True):
        assert before + d * 1000 <= r.due <= after + d * 1000
    assert q.client.zcard(keys_of(q).delayed) == n
    assert q.get("m599").body == {"i": 599}  # type: ignore[union-attr]


def test_enqueue_many_is_one_round_trip(queue: sd.Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bounded call is sent before the first reply is read (each leaves as soon as it is
    packed, so Redis runs the first while the next are packed)."""
    queue.enqueue("warm", id="warm")  # the once-per-process partition check is done
    queue.client.script_load(script("enqueueJobs").source)  # no NOSCRIPT round
    events: list[str] = []
    conn = redis.connection.AbstractConnection
    send, read = conn.send_packed_command, conn.read_response

    def sending(self: Any, packed: Any, *args: Any, **kwargs: Any) -> Any:
        chunks = packed if isinstance(packed, list) else [packed]
        events.append("call" if any(b"EVALSHA" in bytes(c) for c in chunks) else "command")
        return send(self, packed, *args, **kwargs)

    def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
        events.append("read")
        return read(self, *args, **kwargs)

    monkeypatch.setattr(conn, "send_packed_command", sending)
    monkeypatch.setattr(conn, "read_response", reading)
    results = queue.enqueue_many(sd.JobSpec("t", i) for i in range(1000))
    assert len({r.id for r in results}) == 1000 and all(r.created for r in results)
    calls = events[events.index("call"):]  # after a new connection's handshake commands
    assert calls.count("read") == calls.count("call") == math.ceil(1000 / ENQUEUE_BATCH)
    assert "call" not in calls[calls.index("read"):]  # all sent before the first reply is read


def test_an_enqueue_many_cut_short_leaves_no_reply_behind(own_redis: Any) -> None:
    """A read that times out half-way through the pipeline drops that connection (its other
    replies are still on the way) and the round goes again: every job once, and the next
    calls read their own replies."""
    queue = sd.Queue("cut", url=own_redis.url, socket_timeout=0.1, retry_for=10)
    queue.enqueue("t", id="warm")
    busy = redis.Redis.from_url(own_redis.url)
    connections = int(busy.info("stats")["total_connections_received"])
    spin = ("local function us() local t = redis.call('TIME') return t[1] * 1e6 + t[2] end "
            "local stop = us() + 500000 while us() < stop do end")
    blocker = threading.Thread(target=busy.eval, args=(spin, 0))  # Redis busy for 0.5 s
    blocker.start()
    time.sleep(0.05)
    try:
        results = queue.enqueue_many([sd.JobSpec("t", i, id=f"c{i}") for i in range(600)])
    finally:
        blocker.join()
    assert [r.id for r in results] == [f"c{i}" for i in range(600)]
    assert int(busy.info("stats")["total_connections_received"]) > connections  # reconnected
    assert busy.zcard(PartitionKeys("cut", 0).delayed) == 601
    after = queue.enqueue_many([sd.JobSpec("t", "x", id="after"), sd.JobSpec("t", id="c0")] * 200)
    assert (after[0].created, after[1].created, after[1].due) == (True, False, results[0].due)
    assert queue.get("after").body == "x"  # type: ignore[union-attr]
    busy.close()
    queue.close()


def test_enqueue_many_duplicates_inside_one_batch(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    specs = [sd.JobSpec("t", "first", id="dup", delay=10)]
    specs += [sd.JobSpec("t", i, id=f"f{i}", delay=1) for i in range(300)]
    specs += [sd.JobSpec("t", "again", id="dup", delay=99),  # another script call of the batch
              sd.JobSpec("t", "near", id="f3", delay=50)]
    results = q.enqueue_many(specs)
    assert results[0].created and not results[-2].created and not results[-1].created
    assert results[-2].due == results[0].due and results[-2].state == "delayed"
    assert results[-1].due == results[4].due
    assert q.get("dup").body == "first"  # type: ignore[union-attr]
    assert q.client.zcard(keys_of(q).delayed) == 301


def test_enqueue_many_over_partitions_keeps_spec_order(make_queue: Callable[..., Face]) -> None:
    q = make_queue(partitions=3)
    specs = [sd.JobSpec("t", i, id=f"p{i}", delay=5) for i in range(400)]
    results = q.enqueue_many(specs)
    assert [r.id for r in results] == [s.id for s in specs]
    used = {partition_of(s.id or "", 3) for s in specs}
    assert used == {0, 1, 2}
    total = sum(q.client.zcard(PartitionKeys(q.config.name, p).delayed) for p in range(3))
    assert total == 400
    assert q.get("p399").body == 399 and q.enqueue_many([]) == []  # type: ignore[union-attr]


# --- idempotent enqueue, replace -------------------------------------------------------------

@pytest.mark.parametrize("state", STATES)
def test_enqueue_of_an_existing_id_creates_nothing(
    make_queue: Callable[..., Face], state: str
) -> None:
    q = make_queue(keep_done=60)
    put_in_state(q, state, "same")
    before, layout = q.get("same"), where(q)
    assert before is not None and before.state == state
    again = q.enqueue("t", {"other": True}, id="same", delay=1)
    # the enqueue script does not read the group's pending list: a reserved job reports "ready"
    reported = "ready" if state == "reserved" else state
    assert (again.created, again.state, again.due) == (False, reported, before.due)
    after = q.get("same")
    assert after is not None and (after.state, after.body, after.due) == (
        state, before.body, before.due)
    assert where(q) == layout


@pytest.mark.parametrize("state", STATES)
def test_replace_reschedules_an_existing_id(make_queue: Callable[..., Face], state: str) -> None:
    q = make_queue(keep_done=60)
    put_in_state(q, state, "same")
    before = server_ms(q.client)
    again = q.enqueue("t", {"new": 1}, id="same", delay=300, replace=True, max_attempts=4)
    assert (again.created, again.state) == (False, "delayed")
    assert again.due >= before + 300_000
    info = q.get("same")
    assert info is not None
    assert (info.state, info.body, info.due, info.attempts, info.max_attempts) == (
        "delayed", {"new": 1}, again.due, 0, 4)
    running = int(state == "reserved")  # its delivery stays until it settles (held job)
    assert where(q) == {"records": 1, "delayed": 1, "stream": running, "pending": running,
                        "dead": 0, "tombstones": 0}


def test_acknowledged_id_is_free_again_without_keep_done(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue("t", id="once")
    run_worker(q, "t", lambda job: None)
    assert q.get("once") is None
    assert q.enqueue("t", id="once", delay=5).created


def test_done_tombstone_expires_after_keep_done(make_queue: Callable[..., Face]) -> None:
    q = make_queue(keep_done=0.3)
    put_in_state(q, "done", "tomb")
    assert q.get("tomb").state == "done"  # type: ignore[union-attr]
    assert not q.enqueue("t", id="tomb", delay=5).created
    time.sleep(0.4)
    assert q.get("tomb") is None
    assert q.enqueue("t", id="tomb", delay=5).created


# --- cancel ----------------------------------------------------------------------------------

@pytest.mark.parametrize("state", ["delayed", "ready", "reserved", "dead"])
def test_cancel_removes_a_job_in_every_state(make_queue: Callable[..., Face], state: str) -> None:
    q = make_queue()
    put_in_state(q, state, "gone")
    assert q.cancel("gone") is True
    assert q.get("gone") is None
    assert where(q) == {"records": 0, "delayed": 0, "stream": 0, "pending": 0, "dead": 0,
                        "tombstones": 0}
    totals = q.stats().total
    assert (totals.delayed, totals.ready, totals.reserved, totals.dead) == (0, 0, 0, 0)
    assert q.cancel("gone") is False


def test_cancel_of_done_or_missing_is_false(make_queue: Callable[..., Face]) -> None:
    q = make_queue(keep_done=60)
    put_in_state(q, "done", "finished")
    assert q.cancel("finished") is False and q.cancel("never-was") is False
    assert q.get("finished").state == "done"  # type: ignore[union-attr]


def test_cancel_while_running_makes_the_ack_a_no_op(queue: sd.Queue) -> None:
    queue.enqueue("t", {"v": 1}, id="running")
    worker = sd.Worker(queue, block=0.05)
    runs: list[int] = []

    @worker.handler("t")
    def handle(job: sd.Job) -> None:  # a sync handler runs in a thread: plain Queue calls
        runs.append(job.body["v"])
        if job.body["v"] == 1:
            assert queue.cancel("running") is True
            # the id is free: a new job under the same id must survive the old run's ack
            assert queue.enqueue("t", {"v": 2}, id="running", delay=600).created

    async def serve_until_settled() -> None:
        serving = asyncio.create_task(worker.serve())
        while not runs or worker.inflight:
            await asyncio.sleep(0.02)
        worker.stop()  # the stop flushes the pending acknowledgement
        await serving

    asyncio.run(asyncio.wait_for(serve_until_settled(), 30))
    assert runs == [1] and worker.counts["handled"] == 1
    info = queue.get("running")
    assert info is not None and (info.state, info.body) == ("delayed", {"v": 2})
    assert queue.cancel("running") is True
    time.sleep(0.1)
    run_worker(queue, "t", lambda job: runs.append(-1))
    assert runs == [1]
    assert where(queue) == {"records": 0, "delayed": 0, "stream": 0, "pending": 0, "dead": 0,
                            "tombstones": 0}


# --- reschedule ------------------------------------------------------------------------------

@pytest.mark.parametrize("state", ["delayed", "ready", "reserved", "dead"])
def test_reschedule_in_every_state(make_queue: Callable[..., Face], state: str) -> None:
    q = make_queue()
    put_in_state(q, state, "move")
    before = server_ms(q.client)
    assert q.reschedule("move", delay=0.2) is True
    info = q.get("move")
    assert info is not None and info.state == "delayed" and info.attempts == 0
    assert before + 200 <= info.due <= server_ms(q.client) + 201  # rounded up to the ms
    # a reserved job's delivery stays until it settles; the job is held behind it
    # (docs/guarantees.md#never-twice-at-once, tests/system/test_reschedule_running.py)
    running = int(state == "reserved")
    assert where(q) == {"records": 1, "delayed": 1, "stream": running, "pending": running,
                        "dead": 0, "tombstones": 0}
    at = server_ms(q.client) / 1000 + 3600
    assert q.reschedule("move", at=at) is True
    assert q.get("move").due == math.ceil(at * 1000)  # type: ignore[union-attr]
    assert q.reschedule("move", delay=0) is True
    if not running:
        assert promote(q) == 1 and q.get("move").state == "ready"  # type: ignore[union-attr]


def test_reschedule_of_done_or_missing_is_false(make_queue: Callable[..., Face]) -> None:
    q = make_queue(keep_done=60)
    put_in_state(q, "done", "finished")
    assert q.reschedule("finished", delay=5) is False
    assert q.reschedule("never-was", delay=5) is False
    assert q.get("finished").state == "done"  # type: ignore[union-attr]


# --- get -------------------------------------------------------------------------------------

@pytest.mark.parametrize("state", STATES)
def test_get_in_every_state(make_queue: Callable[..., Face], state: str) -> None:
    q = make_queue(keep_done=60)
    put_in_state(q, state, "seen", topic="t", body={"k": [1, 2]})
    if state == "reserved":
        time.sleep(0.05)
    info = q.get("seen")
    assert info is not None
    assert (info.id, info.topic, info.state, info.body) == ("seen", "t", state, {"k": [1, 2]})
    if state == "reserved":
        assert info.consumer == "c1" and info.deliveries == 1
        assert info.idle_ms is not None and 40 <= info.idle_ms < 60_000
    else:
        assert info.consumer is None and info.idle_ms is None and info.deliveries is None
    if state == "dead":
        assert info.attempts == 1 and info.error is not None
        assert info.error.startswith("RuntimeError: boom seen")
    else:
        assert info.error is None
    assert q.get("missing") is None


# --- stats, dead letters, claim --------------------------------------------------------------

def test_stats_per_topic(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    put_in_state(q, "dead", "d1", topic="c")
    register_group(q, "b")
    q.enqueue_many([sd.JobSpec("a", i, delay=600) for i in range(2)])
    q.enqueue_many([sd.JobSpec("b", i) for i in range(3)])
    promote(q)
    reserve_one = q.client.xreadgroup("workers", "c1", {keys_of(q).stream("b"): ">"}, count=1)
    assert len(reserve_one[0][1]) == 1
    q.enqueue("e", id="waiting")  # due now, never promoted: lag grows
    time.sleep(0.15)
    stats = q.stats()
    assert set(stats.topics) == {"a", "b", "c", "e"}
    a, b, c, e = (stats.topics[t] for t in "abce")
    assert (a.delayed, a.ready, a.reserved, a.dead, a.lag_ms) == (2, 0, 0, 0, 0)
    assert (b.delayed, b.ready, b.reserved, b.dead, b.group) == (0, 2, 1, 0, "workers")
    assert (c.delayed, c.ready, c.reserved, c.dead) == (0, 0, 0, 1)
    assert (e.delayed, e.ready) == (1, 0)
    assert 149 <= e.lag_ms < 60_000 and 149 <= b.lag_ms < 60_000  # due rounded up to the ms
    assert abs(stats.now - server_ms(q.client)) < 5_000
    total = stats.total
    assert (total.delayed, total.ready, total.reserved, total.dead) == (3, 2, 1, 1)


def test_dead_list_replay_and_purge(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    q.enqueue_many([sd.JobSpec("t", i, id=f"dead{i}", max_attempts=1) for i in range(3)])
    q.enqueue("u", id="deadu", max_attempts=1)
    run_worker(q, "t", fail)
    run_worker(q, "u", fail)
    dead = q.dead_list()
    assert sorted(d.id for d in dead) == ["dead0", "dead1", "dead2", "deadu"]
    assert all(d.attempts == 1 and d.error.startswith("RuntimeError: boom") for d in dead)
    assert [d.id for d in q.dead_list(topic="u")] == ["deadu"] and len(q.dead_list(limit=2)) == 2
    assert q.dead_replay(id="dead1", delay=600) == 1
    info = q.get("dead1")
    assert info is not None and (info.state, info.attempts) == ("delayed", 0)
    assert q.dead_replay(topic="u") == 1 and q.get("deadu").state == "delayed"  # type: ignore[union-attr]
    assert q.dead_purge(id="dead0") == 1 and q.get("dead0") is None
    assert q.dead_purge() == 1 and q.get("dead2") is None
    assert q.dead_list() == [] and q.dead_purge() == 0 and q.dead_replay() == 0
    assert q.stats().total.dead == 0


def test_claim_requeues_or_hands_over_stuck_deliveries(make_queue: Callable[..., Face]) -> None:
    q = make_queue()
    register_group(q, "t")
    q.enqueue("t", id="stuck", ttr=60, max_attempts=5)
    promote(q)
    assert reserve(q, "t") == ["stuck"]
    nothing = q.claim("workers")  # idle far below the job's ttr
    assert (nothing.moved, nothing.dead) == ([], [])
    time.sleep(0.05)
    handed = q.claim("workers", topic="t", min_idle=0.01, to="c2")
    assert handed.moved == ["stuck"]
    assert q.get("stuck").consumer == "c2"  # type: ignore[union-attr]
    time.sleep(0.05)
    requeued = q.claim("workers", min_idle=timedelta(milliseconds=10))
    assert requeued.moved == ["stuck"]
    info = q.get("stuck")
    assert info is not None and (info.state, info.attempts) == ("ready", 1)
    assert reserve(q, "t", consumer="c3") == ["stuck"]
    with pytest.raises(sd.GroupNotFound, match="group"):
        q.claim("nobody")
