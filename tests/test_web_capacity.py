"""How many long polls one ``streamdelay serve`` takes, and what the ones beyond get
(docs/http.md#capacity): every admitted ``:reserve`` holds a Redis connection of a pool sized
to ``--max-polls``; a poll beyond that is answered 429 ``busy`` with ``Retry-After`` at once,
never a 503 that blames Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest

import streamdelay as sd
from tests.redis_server import RedisServer
from tests.web_server import WebServer


async def _polls(server: WebServer, queue: str, topic: str, how_many: int, wait_ms: int,
                 on_answer: Any = None) -> list[httpx.Response]:
    """``how_many`` concurrent ``:reserve`` calls, each on its own connection."""
    limits = httpx.Limits(max_connections=how_many + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60,
                                 headers=server.auth("consumer")) as client:
        async def one(number: int) -> httpx.Response:
            answer = await client.post(f"/v1/queues/{queue}/topics/{topic}:reserve",
                                       json={"group": "g", "consumer": f"c{number}",
                                             "wait_ms": wait_ms, "count": 1})
            if on_answer is not None:
                on_answer(answer)
            return answer

        return await asyncio.gather(*(one(n) for n in range(how_many)))


def test_more_polls_than_redis_py_default_pool_are_all_served(web_server: WebServer) -> None:
    # redis-py's default pool holds 100 connections: the 101st waiting poll used to get 503
    # redis_unavailable "(Too many connections)"
    queue = web_server.queues[0]
    answers = asyncio.run(_polls(web_server, queue, f"idle{uuid.uuid4().hex[:6]}", 200, 8000))
    statuses = Counter(answer.status_code for answer in answers)
    assert statuses == {204: 200}, [a.text for a in answers if a.status_code != 204][:3]


def test_polls_beyond_capacity_get_429_busy_and_the_admitted_get_jobs(
        shared_redis: RedisServer) -> None:
    capacity, extra = 8, 12
    queue, topic = f"cap{uuid.uuid4().hex[:8]}", "work"
    with WebServer(shared_redis.url, [queue], "--max-polls", str(capacity)) as server:
        busy = asyncio.Event()
        refused: list[httpx.Response] = []

        def seen(answer: httpx.Response) -> None:
            if answer.status_code == 429:
                refused.append(answer)
                if len(refused) == extra:
                    busy.set()

        async def scenario() -> list[httpx.Response]:
            polls = asyncio.ensure_future(_polls(server, queue, topic, capacity + extra, 20000,
                                                 seen))
            await asyncio.wait_for(busy.wait(), 30)  # the excess was refused at once
            await asyncio.sleep(0.3)  # the admitted ones are waiting in Redis
            async with httpx.AsyncClient(base_url=server.url, headers=server.auth("admin"),
                                         timeout=30) as client:
                for number in range(capacity):
                    made = await client.post(f"/v1/queues/{queue}/jobs",
                                             json={"topic": topic, "id": f"j{number}"})
                    assert made.status_code == 201, made.text
            return await polls

        answers = asyncio.run(scenario())
        statuses = Counter(answer.status_code for answer in answers)
        assert statuses == {200: capacity, 429: extra}, statuses
        for answer in refused:
            assert answer.headers["retry-after"] == "1"
            assert answer.json()["error"]["code"] == "busy"
        taken = [d["id"] for a in answers if a.status_code == 200
                 for d in a.json()["deliveries"]]
        assert sorted(taken) == sorted(f"j{n}" for n in range(capacity))
        # the service stays healthy, and a poll is admitted again once capacity frees up
        status, _ = server.request("POST", f"/v1/queues/{queue}/topics/{topic}:reserve",
                                   {"group": "g", "wait_ms": 0}, token="consumer")
        assert status == 204


def test_the_pool_sizes_reach_the_clients(redis_url: str) -> None:
    queue = sd.AsyncQueue("pools", url=redis_url, max_connections=7, reserve_connections=9)
    assert queue.client.connection_pool.max_connections == 7  # type: ignore[union-attr]
    assert queue._reading_client().connection_pool.max_connections == 9  # type: ignore[union-attr]
    for wrong in ({"max_connections": 0}, {"reserve_connections": -1}):
        with pytest.raises(sd.ValidationError):
            sd.AsyncQueue("pools", url=redis_url, **wrong)
