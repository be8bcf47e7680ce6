"""A ``Commands`` step on an asyncio client (``io/steps.py: _round_trip_async``): the
commands written at once on one pooled connection, their replies read in order, and a
connection left with replies unread never reused (against a real redis-server)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from streamdelay.base.errors import StreamdelayError
from streamdelay.consume.core.taking import TIME, clock_ms, parse_read
from streamdelay.io.clients import async_client
from streamdelay.io.steps import run_step_async
from streamdelay.protocol.plan import Command, Commands
from streamdelay.protocol.streams import read_group


def _run(body: Any) -> Any:
    return asyncio.run(asyncio.wait_for(body, 30))


def test_a_read_and_the_clock_come_back_in_order_parsed_as_alone(redis_url: str) -> None:
    stream = f"rt:{uuid.uuid4().hex}"

    async def body() -> tuple[Any, Any, Any]:
        client = async_client(redis_url, 5.0)
        try:
            await client.xgroup_create(stream, "g", id="0", mkstream=True)
            await client.xadd(stream, {"id": "j1"})
            await client.xadd(stream, {"id": "j2"})
            read = read_group("g", "c", [stream], 10, None)
            both = await run_step_async(client, Commands((read, TIME)))
            await client.xadd(stream, {"id": "j3"})
            alone = await run_step_async(client, read)
            return both, alone, await client.time()
        finally:
            await client.aclose()

    (reply, now), alone, later = _run(body())
    entries = parse_read(reply, {stream: (0, "t")}, clock_ms(now))
    assert [e.fields[b"id"] for e in entries] == [b"j1", b"j2"]
    assert all(e.fresh for e in entries)
    assert [e.fields[b"id"] for e in parse_read(alone, {stream: (0, "t")})] == [b"j3"]
    assert 0 < clock_ms(now) <= clock_ms(later)


def test_an_error_reply_is_raised_and_the_connection_stays_in_step(redis_url: str) -> None:
    key = f"rt:{uuid.uuid4().hex}"

    async def body() -> tuple[str, list[Any]]:
        client = async_client(redis_url, 5.0)
        try:
            await client.set(key, "text")
            with pytest.raises(StreamdelayError) as caught:
                await run_step_async(client, Commands((
                    Command(("GET", key)), Command(("INCR", key)), Command(("ECHO", "after")))))
            # the replies after the error were read off: a connection left behind would answer
            # this step with the "after" of the one above
            after = await run_step_async(client, Commands((Command(("ECHO", "next")),
                                                           Command(("GET", key)))))
            return str(caught.value), after
        finally:
            await client.aclose()

    error, after = _run(body())
    assert "INCR" in error and "not an integer" in error
    assert after == [b"next", b"text"]


def test_a_cancelled_blocking_read_never_answers_a_later_step(redis_url: str) -> None:
    stream = f"rt:{uuid.uuid4().hex}"

    async def body() -> list[Any]:
        client = async_client(redis_url, 5.0)
        try:
            await client.xgroup_create(stream, "g", id="$", mkstream=True)
            read = read_group("g", "c", [stream], 10, 3000)
            blocked = asyncio.ensure_future(run_step_async(client, Commands((read, TIME))))
            await asyncio.sleep(0.2)
            blocked.cancel()
            with pytest.raises(asyncio.CancelledError):
                await blocked
            # the blocked read would now be answered on its connection, were it still open
            await client.xadd(stream, {"id": "late"})
            return list(await run_step_async(client, Commands((Command(("ECHO", "mine")),
                                                               TIME))))
        finally:
            await client.aclose()

    echo, now = _run(body())
    assert echo == b"mine"
    assert clock_ms(now) > 0
