"""``streamdelay serve`` reclaims once however many consumers it serves: its reclaim loop holds
each served queue's reclaim in the process's cadence (``consume/core/cadence.py``), so the
``:reserve`` rounds of its HTTP consumers (``AsyncQueue.reserve`` on the service's queue) add
no ``requeueStuck`` pass of their own (docs/design.md#the-consumer-core). Counted on a real
server: every command in the SLOWLOG."""

from __future__ import annotations

import asyncio
import time

import pytest

import streamdelay as sd
from streamdelay.protocol.scripts import script
from streamdelay.web.serve_settings import ServeSettings
from streamdelay.web.service import Service
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(120)
INTERVAL = 2.0  # serve's reclaim_interval; a reserve caller alone reclaims every 1 s
CONSUMERS = 4
SECONDS = 6.0


def _requeue_calls(server: RedisServer) -> int:
    sha = script("requeueStuck").sha
    entries = server.client().slowlog_get(100_000)
    return sum(1 for e in entries
               if [bytes(a).decode(errors="replace") if isinstance(a, bytes) else str(a)
                   for a in (e.get("command") or b"").split()[:2]] == ["EVALSHA", sha])


def test_serve_reclaims_once_however_many_consumers_reserve(own_redis: RedisServer) -> None:
    admin = own_redis.client()
    with sd.Queue("served", url=own_redis.url) as producer:
        producer.enqueue("t", 1, id="first")

    async def scenario() -> float:
        service = Service(ServeSettings(url=own_redis.url, queues=("served",),
                                        reclaim_interval=INTERVAL))
        await service.start()
        queue = service.queues["served"]
        try:
            await queue.reserve("t", consumer="c0", wait=2)  # registered: the pair is recorded
            admin.config_set("slowlog-log-slower-than", 0)
            admin.config_set("slowlog-max-len", 100_000)
            admin.slowlog_reset()
            began = time.monotonic()

            async def consume(name: str) -> None:
                while time.monotonic() - began < SECONDS:
                    for reservation in await queue.reserve("t", consumer=name, wait=0.3):
                        await reservation.ack()

            await asyncio.gather(*(consume(f"c{i}") for i in range(CONSUMERS)))
            return time.monotonic() - began
        finally:
            admin.config_set("slowlog-log-slower-than", 10_000)
            await service.stop()

    elapsed = asyncio.run(scenario())
    calls = _requeue_calls(own_redis)
    # one pass per 0.8-1.2 intervals (one partition, one pair: one call each); the reserve
    # rounds of four consumers, every second each, would more than double it
    assert 1 <= calls <= elapsed / (0.8 * INTERVAL) + 1, calls


def test_a_reserve_caller_without_serve_reclaims_itself(own_redis: RedisServer) -> None:
    """No serve loop holds the queue: the rounds run the reclaim, once a second per (group,
    topic) in the process, whatever the number of consumers or queue objects."""
    with sd.Queue("alone", url=own_redis.url) as one, sd.Queue("alone", url=own_redis.url) as two:
        one.enqueue("t", 1, id="a")
        one.reserve("t", consumer="c0", wait=2)
        admin = own_redis.client()
        admin.config_set("slowlog-log-slower-than", 0)
        admin.config_set("slowlog-max-len", 100_000)
        admin.slowlog_reset()
        began = time.monotonic()
        while time.monotonic() - began < 3.0:
            for i, queue in enumerate((one, two, one, two)):
                queue.reserve("t", consumer=f"c{i}", wait=0.1)
        elapsed = time.monotonic() - began
        admin.config_set("slowlog-log-slower-than", 10_000)
    calls = _requeue_calls(own_redis)
    assert 1 <= calls <= elapsed / 1.0 + 1, calls
