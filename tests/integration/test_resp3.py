"""Every face on a URL with ``?protocol=3`` (RESP3) exactly as on RESP2 (docs/scale-out.md#urls):
the Worker (its read, its settle, its embedded dispatcher), a Dispatcher with wake-ups,
``reserve`` and the settles of its receipts, ``events`` (read and followed), ``result`` waits,
``stats`` of a staged topic (``ZREVRANGE WITHSCORES``) and ``migrate`` (``XINFO``). Each test
runs its jobs end to end under a bound: a read that cannot parse its reply used to restart the
read loop for ever (a hang), so every wait here is bounded and a hang fails the test. The
replies themselves, as redis-py gives them on RESP2 and RESP3: tests/unit/test_resp_replies.py,
checked against this server by ``test_the_recorded_replies_are_what_the_server_gives``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.integration.test_pull import promote, running_dispatcher
from tests.integration.test_workflows_partitions import spread
from tests.support.redis_server import RedisServer, wait_until
from tests.support.resp_replies import reader, record
from tests.unit import resp_recorded

pytestmark = pytest.mark.timeout(90)
BOUND_S = 30.0  # what any face below may take; far above the ~1 s each needs


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def proto_url(request: pytest.FixtureRequest, redis_url: str) -> str:
    """The shared server's URL asking for RESP2 or RESP3 (redis-py's ``protocol`` option)."""
    return f"{redis_url}?protocol={request.param}"


def assert_settled(url: str, queue: str, topic: str) -> None:
    """Nothing left of the queue's jobs: no record, no entry, nothing pending in any group."""
    plain = redis.Redis.from_url(url.partition("?")[0])
    keys = PartitionKeys(queue, 0)
    assert plain.hlen(keys.jobs) == 0, plain.hkeys(keys.jobs)
    assert plain.xlen(keys.stream(topic)) == 0
    for group in plain.xinfo_groups(keys.stream(topic)):
        assert group["pending"] == 0, group


def run_until_idle(q: sd.Queue) -> None:
    """A fresh Worker (a Worker serves once) runs every job of topic ``t`` until idle."""
    worker = sd.Worker(q)

    @worker.handler("t")
    def run(job: sd.Job) -> None:
        del job

    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), BOUND_S))


def test_a_worker_runs_batches_retries_and_keeps_results(proto_url: str, queue_name: str
                                                         ) -> None:
    """Several jobs per read (one entry per read used to fail to unpack; two gave an entry id
    made of a whole entry, "Invalid stream ID" at the settle), a retry to dead, results."""
    q = sd.Queue(queue_name, url=proto_url, keep_result=60)
    q.enqueue_many([sd.JobSpec("t", {"n": n}, id=f"j{n}") for n in range(12)])
    q.enqueue("t", {"fail": True}, id="bad", max_attempts=2, backoff=[0.01])
    worker = sd.Worker(q, concurrency=4)
    seen: list[str] = []

    @worker.handler("t")
    async def run(job: sd.Job) -> int:
        seen.append(job.id)
        if job.body.get("fail"):
            raise RuntimeError("boom")
        return int(job.body["n"]) * 10

    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), BOUND_S))
    assert sorted(seen) == sorted([*(f"j{n}" for n in range(12)), "bad", "bad"])
    info = q.get("bad")
    assert info is not None and (info.state, info.attempts) == ("dead", 2)
    found = q.result("j7", timeout=5)
    assert found is not None and found.value == 70
    q.dead_purge()
    assert_settled(proto_url, q.name, "t")
    q.close()


def test_a_chain_across_partitions_and_a_limited_topic(proto_url: str, queue_name: str
                                                      ) -> None:
    """Three partitions: the Worker's read of every partition's streams, the dispatcher's
    outbox forward (``XREAD``) of a chain whose links change partition, and a topic under a
    concurrency limit (taken through ``takeLimited``, waiting on ``BLPOP`` / ``XREAD``)."""
    with sd.Queue(queue_name, url=proto_url, partitions=3) as q:
        ids = spread("c", 6)
        q.chain([sd.JobSpec("t", id=i) for i in ids])
        q.limit("lim", concurrency=1)
        q.enqueue_many([sd.JobSpec("lim", id=f"l{n}") for n in range(4)])
        ran: list[str] = []
        worker = sd.Worker(q, block=0.2)
        worker.handler("t")(lambda job: ran.append(job.id))
        worker.handler("lim")(lambda job: ran.append(job.id))
        asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), BOUND_S))
        assert [i for i in ran if i.startswith("c")] == ids
        assert sorted(i for i in ran if i.startswith("l")) == ["l0", "l1", "l2", "l3"]


def test_a_dispatcher_promotes_on_time_and_wakes_for_an_earlier_job(proto_url: str,
                                                                    queue_name: str) -> None:
    """The promote loop and the ``BZPOPMIN`` wake-up: a job enqueued while the dispatcher
    sleeps towards a later one is promoted at its own time, not at the safety tick."""
    q = sd.Queue(queue_name, url=proto_url)
    q.enqueue("t", None, id="late", delay=3600)
    with running_dispatcher(q):
        time.sleep(0.2)  # the dispatcher sleeps towards "late" (or its 5 s safety tick)
        q.enqueue("t", None, id="soon", delay=0.2)
        assert wait_until(lambda: q.get("soon").state == "ready",  # type: ignore[union-attr]
                          timeout=4.0)  # well under the 5 s safety tick: the wake-up worked
    assert q.get("late").state == "delayed"  # type: ignore[union-attr]
    q.close()


def test_reserve_settles_each_receipt(proto_url: str, queue_name: str) -> None:
    """``reserve`` of several, ack, fail (retried), touch, release; a second round; nothing
    left; an empty reserve returns within its wait."""
    q = sd.Queue(queue_name, url=proto_url)
    q.enqueue_many([sd.JobSpec("t", {"n": n}, id=f"r{n}") for n in range(4)])
    promote(q, 4)
    got = q.reserve("t", wait=5, count=4)
    assert sorted(r.id for r in got) == ["r0", "r1", "r2", "r3"]
    by_id = {r.id: r for r in got}
    by_id["r0"].ack("ok")
    by_id["r1"].touch()
    by_id["r1"].ack()
    assert by_id["r2"].fail("again", retry_delay=0) == "retried"
    assert q.release([by_id["r3"]]) == 1
    with running_dispatcher(q):
        again: list[sd.Reservation] = []
        deadline = time.monotonic() + BOUND_S
        while len(again) < 2 and time.monotonic() < deadline:
            again += q.reserve("t", wait=2, count=2)
    assert sorted((r.id, r.attempt) for r in again) == [("r2", 2), ("r3", 1)]
    for r in again:
        r.ack()
    started = time.monotonic()
    assert q.reserve("t", wait=0.3) == []
    assert time.monotonic() - started < BOUND_S
    assert_settled(proto_url, q.name, "t")
    q.close()


def test_async_reserve_and_result_wait(proto_url: str, queue_name: str) -> None:
    """``AsyncQueue.reserve`` and ``result`` waiting on a job a reservation then acks."""
    async def scenario() -> Any:
        aq = sd.AsyncQueue(queue_name, url=proto_url, keep_result=60)
        try:
            await aq.enqueue("t", {"n": 1}, id="a1")
            dispatcher = sd.Dispatcher(aq.config)
            promoting = asyncio.create_task(dispatcher.run())
            try:
                waiting = asyncio.create_task(aq.result("a1", timeout=BOUND_S))
                got: list[sd.AsyncReservation] = []
                while not got:
                    got = await aq.reserve("t", wait=2)
                await got[0].ack({"answer": 42})
                found = await waiting
            finally:
                dispatcher.stop()
                await promoting
                await dispatcher.close()
            return found.value if found is not None else None
        finally:
            await aq.close()

    assert asyncio.run(asyncio.wait_for(scenario(), BOUND_S)) == {"answer": 42}


def test_events_are_read_and_followed(proto_url: str, queue_name: str) -> None:
    """``events(follow=False)`` lists a job's life; ``events(follow=True)`` gives the events
    of a job run after the follow started, then is closed."""
    q = sd.Queue(queue_name, url=proto_url, events=True)
    q.enqueue("t", None, id="e1")
    run_until_idle(q)
    kinds = [e.kind for e in q.events(follow=False) if e.id == "e1"]
    assert kinds[0] == "enqueued" and kinds[-1] == "succeeded", kinds
    followed = q.events(follow=True)
    assert [e.id for e in (next(followed) for _ in kinds)] == ["e1"] * len(kinds)
    q.enqueue("t", None, id="e2")
    run_until_idle(q)
    later: list[str] = []
    while "succeeded" not in later:  # each next() waits at most a read's block (bounded)
        event = next(followed)
        assert event.id == "e2"
        later.append(event.kind)
    followed.close()  # type: ignore[attr-defined]
    assert later[0] == "enqueued"
    q.close()


def test_async_events_follow(proto_url: str, queue_name: str) -> None:
    """``AsyncQueue.events(follow=True)`` across a job a Worker runs meanwhile."""
    async def scenario() -> list[str]:
        aq = sd.AsyncQueue(queue_name, url=proto_url, events=True)
        q = sd.Queue(queue_name, url=proto_url, events=True)
        worker = sd.Worker(q)

        @worker.handler("t")
        def run(job: sd.Job) -> None:
            del job

        try:
            await aq.enqueue("t", None, id="f1")
            kinds: list[str] = []
            serving = asyncio.create_task(worker.serve(until_idle=True))
            async for event in aq.events(follow=True):
                kinds.append(event.kind)
                if event.kind == "succeeded":
                    break
            await serving
            return kinds
        finally:
            await aq.close()
            q.close()

    kinds = asyncio.run(asyncio.wait_for(scenario(), BOUND_S))
    assert kinds[0] == "enqueued" and kinds[-1] == "succeeded", kinds


def test_stats_of_a_staged_topic_with_keys(proto_url: str, queue_name: str) -> None:
    """``stats`` reads each staged topic's busiest keys (``ZREVRANGE ... WITHSCORES``: a flat
    list on RESP2, [member, score] pairs on RESP3)."""
    q = sd.Queue(queue_name, url=proto_url)
    for n in range(3):
        q.enqueue("s", None, id=f"a{n}", key="alpha", priority=7)
    q.enqueue("s", None, id="b0", key="beta", priority=7)
    promote(q, 4)
    row = q.stats().topics["s"]
    assert (row.staged, row.ready) == (True, 4)
    assert dict(row.keys) == {"alpha": 3, "beta": 1}
    q.close()


def test_migrate_reads_the_consumers(proto_url: str, queue_name: str) -> None:
    """``migrate`` looks at every group's consumers (``XINFO``: flat lists on RESP2, maps on
    RESP3) before it changes anything."""
    q = sd.Queue(queue_name, url=proto_url)
    q.enqueue("t", None, id="m1")
    promote(q)
    got = q.reserve("t", consumer="c1")
    got[0].ack()
    assert q.migrate(seen_within=60) is not None
    q.close()


def normalised(replies: dict[str, Any]) -> dict[str, Any]:
    """What the readers (protocol/streams.py, protocol/replies.py) read of each recorded reply
    (the rest as it is)."""
    return {name: reader(name)(reply) for name, reply in replies.items()}


@pytest.mark.parametrize("asyncio_path", [True, False], ids=["asyncio", "sync"])
def test_the_recorded_replies_are_what_the_server_gives(own_redis: RedisServer,
                                                       asyncio_path: bool) -> None:
    """tests/unit/resp_recorded.py against this server, on both step paths: the normalisers
    read the live replies of each protocol as the stored ones, and RESP3's as RESP2's; with
    the redis-py that recorded them, the raw replies are the stored ones too (else: run
    ``python -m tests.support.resp_replies`` again)."""
    live = {shape: record(own_redis.url, f"?protocol={n}", asyncio_path)
            for shape, n in (("RESP2", 2), ("RESP3", 3))}
    for shape, replies in live.items():
        stored: dict[str, Any] = getattr(resp_recorded, shape)
        assert normalised(replies) == normalised(stored), shape
        if redis.__version__ == resp_recorded.REDIS_PY:
            assert replies == stored, shape
    assert normalised(live["RESP3"]) == normalised(live["RESP2"])
    assert live["RESP3"]["xreadgroup_two_streams"] != live["RESP2"]["xreadgroup_two_streams"]
