"""What an HTTP ``:reserve`` took is delivered, dead-lettered with its reason, or handed back
(docs/http.md#consumers): a body the JSON answer cannot carry goes dead alone while the others
are delivered; a client that hung up, or an answer that cannot be built, gives every job back
at once with no attempt spent, for the next reserve. Against a real ``streamdelay serve``."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar.response.base import ASGIResponse

import streamdelay as sd
from streamdelay.web.api.handover import _give_back, _Sending
from tests.integration.test_pull import promote
from tests.support.redis_server import RedisServer, wait_until
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(90)


class UnbuildableServer(WebServer):
    """``streamdelay serve`` whose reserve answer for the topic ``unbuildable`` fails to build
    (tests/support/apps/unbuildable_serve.py)."""

    def command(self) -> list[str]:
        """The usual command line, through the module that injects the fault."""
        args = super().command()
        assert args[:3] == [sys.executable, "-m", "streamdelay"]
        return [sys.executable, "-m", "tests.support.apps.unbuildable_serve", *args[3:]]


@pytest.fixture(scope="module")
def unbuildable_server(web_server: WebServer) -> Iterator[WebServer]:
    """A second server of the same queues, with the fault."""
    with UnbuildableServer(web_server.redis_url, web_server.queues) as server:
        yield server


def reserve(server: WebServer, topic: str, **body: object) -> tuple[int, object]:
    """``:reserve`` on the server's first queue."""
    return server.request("POST", f"/v1/queues/{server.queues[0]}/topics/{topic}:reserve",
                          body)


def ack_all(server: WebServer, deliveries: list[dict[str, object]]) -> None:
    """Acknowledge each delivery over HTTP."""
    for delivery in deliveries:
        status, answer = server.request(
            "POST", f"/v1/queues/{server.queues[0]}/deliveries/{delivery['receipt']}:ack")
        assert status == 200, answer


def test_an_unsendable_body_goes_dead_and_the_others_are_delivered(
        web_server: WebServer, shared_redis: RedisServer) -> None:
    with sd.Queue(web_server.queues[0], url=shared_redis.url, serializer="msgpack") as q:
        for n in range(4):
            q.enqueue("mixed", {"n": n}, id=f"ok-{n}")
        q.enqueue("mixed", {"n": msgspec.msgpack.Ext(5, b"x")}, id="ext-1")
        status, answer = reserve(web_server, "mixed", count=10, wait_ms=1000)
        assert status == 200, answer
        assert isinstance(answer, dict)
        deliveries = answer["deliveries"]
        assert sorted(d["id"] for d in deliveries) == [f"ok-{n}" for n in range(4)]
        assert all(d["attempt"] == 1 and d["body"] == {"n": int(d["id"][3:])}
                   for d in deliveries)
        dead = q.get("ext-1")
        assert dead is not None and dead.state == "dead", dead
        assert dead.error is not None and "BodyEncodeError" in dead.error \
            and "JSON" in dead.error and "Ext" in dead.error, dead.error
        ack_all(web_server, deliveries)
        assert q.stats().topics["mixed"].reserved == 0  # nothing held for nobody


def test_a_client_gone_during_a_long_poll_gets_its_job_handed_back(
        web_server: WebServer, shared_redis: RedisServer) -> None:
    """The poll takes a job that came after its client hung up: the job is handed back at
    once, no attempt spent, and the next reserve gets it."""
    base = f"/v1/queues/{web_server.queues[0]}"
    body = json.dumps({"wait_ms": 20000}).encode()
    with sd.Queue(web_server.queues[0], url=shared_redis.url) as q:
        with socket.create_connection(("127.0.0.1", web_server.port), timeout=10) as sock:
            sock.sendall(f"POST {base}/topics/gone:reserve HTTP/1.1\r\nHost: x\r\n"
                         f"Authorization: Bearer {web_server.token('consumer')}\r\n"
                         f"Content-Type: application/json\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            time.sleep(0.5)  # the poll is waiting, in the middle of a 1 s slice
        # at once: the poll's blocking read (within its slice) takes the job
        q.enqueue("gone", {"n": 1}, id="gone-1")
        assert wait_until(lambda: getattr(q.get("gone-1"), "state", None) == "ready",
                          timeout=5, interval=0.05), q.get("gone-1")
        info = q.get("gone-1")
        assert info is not None and info.attempts == 0
        # logged once the hand-back returned, which may be just after the state changed
        assert wait_until(lambda: "the client is gone; 1 job(s) handed back"
                          in web_server.log_text(), timeout=5, interval=0.05), \
            web_server.log_text()[-2000:]
        status, answer = reserve(web_server, "gone", wait_ms=3000)
        assert status == 200, answer
        assert isinstance(answer, dict)
        [delivery] = answer["deliveries"]
        assert delivery["id"] == "gone-1" and delivery["attempt"] == 1
        ack_all(web_server, [delivery])


def test_an_answer_that_fails_to_build_hands_the_jobs_back(
        unbuildable_server: WebServer, shared_redis: RedisServer) -> None:
    with sd.Queue(unbuildable_server.queues[0], url=shared_redis.url) as q:
        ids = [f"ub-{n}" for n in range(3)]
        for job_id in ids:
            q.enqueue("unbuildable", {"id": job_id}, id=job_id)
        status, answer = reserve(unbuildable_server, "unbuildable", count=10, wait_ms=1000)
        assert status == 500, answer
        for job_id in ids:
            info = q.get(job_id)
            assert info is not None and (info.state, info.attempts) == ("ready", 0), info
        taken = q.reserve("unbuildable", count=10, wait=2)
        assert sorted(r.id for r in taken) == ids
        assert {r.attempt for r in taken} == {1}
        for reservation in taken:
            reservation.ack()


@pytest.mark.parametrize("fault", ["send fails", "client gone"])
def test_an_answer_that_cannot_be_sent_hands_the_jobs_back(shared_redis: RedisServer,
                                                           queue_name: str, fault: str) -> None:
    """The response's ASGI app itself, on a real queue: a ``send`` that raises (the
    connection broke while the answer went out), or a client already gone, gives the jobs
    back."""
    with sd.Queue(queue_name, url=shared_redis.url) as plain:
        plain.enqueue("t", 1, id="s-1")
        promote(plain)

    async def run() -> None:
        async with sd.AsyncQueue(queue_name, url=shared_redis.url) as q:
            [taken] = await q.reserve("t")
            sent: list[Any] = []

            async def send(message: Any) -> None:
                if fault == "send fails" and message["type"] == "http.response.body":
                    raise OSError("connection reset")
                sent.append(message)

            async def receive() -> Any:
                await asyncio.sleep(3600)

            gone: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            if fault == "client gone":
                gone.set_result({"type": "http.disconnect"})
            app = _Sending(ASGIResponse(body=b'{"deliveries": []}'), gone,
                           _give_back(q, [taken]))
            if fault == "send fails":
                with pytest.raises(OSError):
                    await app({"type": "http"}, receive, send)
            else:
                await app({"type": "http"}, receive, send)
                assert sent == []  # nothing went out
            info = await q.get("s-1")
            assert info is not None and (info.state, info.attempts) == ("ready", 0), info
            [again] = await q.reserve("t")
            assert again.attempt == 1
            await again.ack()

    asyncio.run(run())
