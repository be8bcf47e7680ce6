"""``GET /v1/queues/{queue}/events`` (docs/http.md#events): the lifecycle events as Server-Sent
Events from a real ``streamdelay serve``; resumable with ``Last-Event-ID``, following new events
across partitions, read scope."""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(60)
PARTITIONS = 3


@pytest.fixture(scope="module")
def served(shared_redis: RedisServer) -> Iterator[tuple[WebServer, sd.Queue]]:
    """A service of one queue with events on (3 partitions), and that queue."""
    name = f"ev{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url, partitions=PARTITIONS, events=True) as q, \
            WebServer(shared_redis.url, [name],
                      env={"STREAMDELAY_PARTITIONS": str(PARTITIONS)}) as server:
        yield server, q


def parse_sse(text: str) -> list[dict[str, str]]:
    """The SSE events of a text/event-stream body (comments and retry lines skipped)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n")
                      if ": " in line and not line.startswith(":"))
        if "data" in fields:
            out.append(fields)
    return out


def get(server: WebServer, path: str, token: str = "reader",
        headers: dict[str, str] | None = None) -> tuple[int, str, str]:
    """(status, content type, body text) of one GET."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    conn.request("GET", path, headers={**server.auth(token), **(headers or {})})
    answer = conn.getresponse()
    body = answer.read().decode()
    conn.close()
    return answer.status, answer.getheader("content-type") or "", body


def test_events_as_sse_resume_with_last_event_id(served: tuple[WebServer, sd.Queue]) -> None:
    server, q = served
    for i in range(4):
        q.enqueue("t", i, id=f"sse-{i}", delay=3600)
    path = f"/v1/queues/{q.name}/events?follow=false&topic=t"
    status, kind, body = get(server, path)
    assert status == 200 and kind.startswith("text/event-stream")
    events = parse_sse(body)
    assert sorted(json.loads(e["data"])["id"] for e in events) == [f"sse-{i}" for i in range(4)]
    assert all(e["event"] == "enqueued" and json.loads(e["data"])["cursor"] == e["id"]
               for e in events)
    status, _, rest = get(server, path, headers={"Last-Event-ID": events[1]["id"]})
    assert status == 200
    assert [json.loads(e["data"])["id"] for e in parse_sse(rest)] == [
        json.loads(e["data"])["id"] for e in events[2:]]
    status, _, same = get(server, path + "&since=" + events[1]["id"])
    assert parse_sse(same) == parse_sse(rest)


def test_last_event_id_inside_an_entry_resumes_after_it(
        served: tuple[WebServer, sd.Queue]) -> None:
    """An enqueue_many of one partition writes one entry of several events
    (docs/events.md#entries): a Last-Event-ID inside it resumes after that event exactly."""
    server, q = served
    q.enqueue_many([sd.JobSpec("mid", i, id=f"mid-{i}", delay=3600) for i in range(40)])
    path = f"/v1/queues/{q.name}/events?follow=false&topic=mid"
    events = parse_sse(get(server, path)[2])
    assert sorted(json.loads(e["data"])["id"] for e in events) == sorted(
        f"mid-{i}" for i in range(40))
    inside = [n for n, e in enumerate(events) if "." in e["id"]]
    assert inside  # 40 jobs over 3 partitions: entries of several events
    for n in (inside[0], inside[-1]):
        status, _, rest = get(server, path, headers={"Last-Event-ID": events[n]["id"]})
        assert status == 200
        assert [e["id"] for e in parse_sse(rest)] == [e["id"] for e in events[n + 1:]]


def test_follow_sends_new_events_as_they_come(served: tuple[WebServer, sd.Queue]) -> None:
    server, q = served
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    conn.request("GET", f"/v1/queues/{q.name}/events?topic=live&since={int(time.time() * 1000)}",
                 headers=server.auth("reader"))
    answer = conn.getresponse()
    assert answer.status == 200
    got: list[dict[str, Any]] = []
    done = threading.Event()

    def read() -> None:
        buffer = ""
        while len(got) < 5:
            line = answer.readline().decode()
            if not line:
                return
            buffer += line
            if line in ("\r\n", "\n"):
                got.extend(json.loads(e["data"]) for e in parse_sse(buffer))
                buffer = ""
        done.set()

    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.5)
    started = time.monotonic()
    for i in range(5):
        q.enqueue("live", i, id=f"live-{i}", delay=3600)
    assert done.wait(10), got
    assert time.monotonic() - started < 5
    assert sorted(e["id"] for e in got) == [f"live-{i}" for i in range(5)]
    assert len({e["cursor"] for e in got}) == 5
    conn.close()


def test_scope_and_bad_input(served: tuple[WebServer, sd.Queue]) -> None:
    server, q = served
    assert get(server, f"/v1/queues/{q.name}/events?follow=false", token="consumer")[0] == 403
    status, _, body = get(server, f"/v1/queues/{q.name}/events?follow=false&since=1-0,2-0")
    assert status in (400, 422) and "since" in body
    assert get(server, f"/v1/queues/nope{q.name}/events?follow=false")[0] == 404
