"""The pull API obeys a topic's limit exactly like a worker (docs/limits.md, docs/pull.md): a
limited topic is read only through the shared take, so ``reserve`` (library and HTTP) never
starts more than the concurrency or the rate lets, waits (without spending attempts) when held
back, and the leases are freed by ack / fail and expire with the ttr."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(90)
TOPIC = "lim.job"


async def _ready_queue(url: str, jobs: int, **limit: object) -> sd.AsyncQueue:
    """A fresh queue with ``jobs`` jobs of TOPIC made ready (promoted) and ``limit`` set."""
    aq = sd.AsyncQueue(f"pl{uuid.uuid4().hex[:10]}", url=url)
    await aq.limit(TOPIC, **limit)  # type: ignore[arg-type]
    await aq.enqueue_many([sd.JobSpec(TOPIC, {"n": i}, id=f"j{i}") for i in range(jobs)])
    dispatcher = sd.Dispatcher(aq.config)
    try:
        deadline = time.monotonic() + 10
        while True:
            row = (await aq.stats()).topics.get(TOPIC)
            if row is not None and row.delayed == 0:
                break
            assert time.monotonic() < deadline, "jobs were not promoted"
            await _promote(dispatcher, aq)
            await asyncio.sleep(0.005)
    finally:
        await dispatcher.close()
    return aq


async def _promote(dispatcher: sd.Dispatcher, aq: sd.AsyncQueue) -> None:
    await dispatcher.promote_once(PartitionKeys(aq.name, 0))


def test_concurrency_is_held_across_reserving_consumers(redis_url: str) -> None:
    """Two consumers (each its own queue object and connection) reserving 5 at a time from a
    topic of concurrency 2: never more than 2 held at once, all handled in one attempt each."""
    held: set[str] = set()
    most = 0
    attempts: dict[str, int] = {}

    async def consume(name: str, aq: sd.AsyncQueue) -> None:
        nonlocal most
        async with sd.AsyncQueue(aq.name, url=redis_url) as mine:
            deadline = time.monotonic() + 40
            while len(attempts) < 12 and time.monotonic() < deadline:
                got = await mine.reserve(TOPIC, consumer=name, wait=0.5, count=5)
                for r in got:  # all of them run at once
                    held.add(r.id)
                    attempts[r.id] = r.attempt
                most = max(most, len(held))
                await asyncio.sleep(0.05)
                for r in got:
                    held.discard(r.id)
                    await r.ack()

    async def main() -> None:
        aq = await _ready_queue(redis_url, 12, concurrency=2)
        try:
            await asyncio.gather(consume("a", aq), consume("b", aq))
            stats = (await aq.stats()).topics[TOPIC]
            assert stats.leases == 0  # every settle freed its lease
        finally:
            await aq.close()

    asyncio.run(main())
    assert most == 2
    assert sorted(attempts.values()) == [1] * 12  # nothing was burnt


def test_over_the_concurrency_reserve_waits_and_a_freed_lease_wakes_it(redis_url: str) -> None:
    """At the limit, reserve(wait) returns nothing after its wait and burns nothing; a settle
    elsewhere (here a failure, retried later) wakes a waiting reserve at once (no poll
    interval)."""

    async def main() -> None:
        aq = await _ready_queue(redis_url, 3, concurrency=1)
        try:
            [first] = await aq.reserve(TOPIC, consumer="a", wait=0, count=3)
            started = time.monotonic()
            assert await aq.reserve(TOPIC, consumer="b", wait=0.6, count=3) == []
            assert time.monotonic() - started >= 0.5
            waiting = asyncio.create_task(aq.reserve(TOPIC, consumer="b", wait=10, count=3))
            await asyncio.sleep(0.5)
            assert not waiting.done()
            acked = time.monotonic()
            assert await first.fail("boom", retry_delay=60) == "retried"
            [second] = await asyncio.wait_for(waiting, 10)
            assert time.monotonic() - acked < 3  # woken by the freed lease, not the wait
            assert second.attempt == 1
            stats = (await aq.stats()).topics[TOPIC]
            assert (stats.leases, stats.ready) == (1, 1)
        finally:
            await aq.close()

    asyncio.run(main())


def test_a_lease_not_settled_expires_with_the_ttr(redis_url: str) -> None:
    async def main() -> None:
        aq = sd.AsyncQueue(f"pl{uuid.uuid4().hex[:10]}", url=redis_url)
        try:
            await aq.limit(TOPIC, concurrency=1)
            await aq.enqueue_many([sd.JobSpec(TOPIC, {}, id=f"t{i}", ttr=1) for i in range(2)])
            dispatcher = sd.Dispatcher(aq.config)
            try:
                await _promote(dispatcher, aq)
                await asyncio.sleep(0.05)
                await _promote(dispatcher, aq)
            finally:
                await dispatcher.close()
            [kept] = await aq.reserve(TOPIC, consumer="a", wait=2, count=2)
            assert await aq.reserve(TOPIC, consumer="b", wait=0.3) == []
            got = await aq.reserve(TOPIC, consumer="b", wait=5)  # the lease expired after 1 s
            assert len(got) == 1 and got[0].attempt == 1 and got[0].id != kept.id
        finally:
            await aq.close()

    asyncio.run(main())


def test_the_rate_is_held_by_reserve(redis_url: str) -> None:
    """rate 20/s: reserve never starts more than the bucket lets (20 at once, then 20 a second)
    over any stretch of the server's clock, each job in its first attempt, nothing dead; and
    the bucket refills (jobs keep coming after the first burst). Timed by the ``started``
    events (server clock, docs/events.md#started), not by when the replies reached this
    process: at load the replies bunch up, the takes do not (docs/limits.md#rates)."""
    starts: list[int] = []

    async def main() -> None:
        aq = await _ready_queue(redis_url, 200, rate="20/s")
        try:
            async def consume(consumer: str) -> None:
                async with sd.AsyncQueue(aq.name, url=redis_url, events=True) as mine:
                    end = time.monotonic() + 3.0
                    while time.monotonic() < end:
                        for r in await mine.reserve(TOPIC, consumer=consumer, wait=0.5,
                                                    count=10):
                            assert r.attempt == 1
                            await r.ack()

            await asyncio.gather(consume("a"), consume("b"))
            assert (await aq.stats()).topics[TOPIC].dead == 0
            starts.extend([event.at async for event in aq.events(TOPIC, follow=False)
                           if event.kind == "started"])
        finally:
            await aq.close()

    asyncio.run(main())
    starts.sort()
    assert len(starts) >= 20 + 5, starts  # the burst, then the refill: the limit lets jobs on
    # The promise: from any start to any later one, at most the bucket (20) plus what it refilled
    # meanwhile (20 a second); one more for the millisecond the server clock is read to.
    for first in range(len(starts)):
        for last in range(first, len(starts)):
            taken = last - first + 1
            allowed = 20 + 20 * (starts[last] - starts[first]) / 1000 + 1
            assert taken <= allowed, (taken, starts[first], starts[last])


def test_http_reserve_obeys_the_concurrency(shared_redis: RedisServer) -> None:
    """Over HTTP: concurrency 1, two reserves of count 5 get one job between them; after the
    ack over HTTP the next reserve gets the next one."""
    aq_name = asyncio.run(_named_ready_queue(shared_redis.url, 4, concurrency=1))
    base = f"/v1/queues/{aq_name}"
    with WebServer(shared_redis.url, [aq_name]) as server:
        status, first = server.request("POST", f"{base}/topics/{TOPIC}:reserve",
                                       {"count": 5, "consumer": "h1"})
        assert status == 200 and len(first["deliveries"]) == 1
        status, _ = server.request("POST", f"{base}/topics/{TOPIC}:reserve",
                                   {"count": 5, "consumer": "h2", "wait_ms": 400})
        assert status == 204
        receipt = first["deliveries"][0]["receipt"]
        assert server.request("POST", f"{base}/deliveries/{receipt}:ack")[0] == 200
        status, second = server.request("POST", f"{base}/topics/{TOPIC}:reserve",
                                        {"count": 5, "consumer": "h2", "wait_ms": 2000})
        assert status == 200 and len(second["deliveries"]) == 1
        assert second["deliveries"][0]["attempt"] == 1


async def _named_ready_queue(url: str, jobs: int, **limit: object) -> str:
    aq = await _ready_queue(url, jobs, **limit)
    await aq.close()
    return aq.name
