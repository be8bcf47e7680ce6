"""HTTP consumers feed the dashboard's lateness record (docs/dashboard.md#lateness): the jobs a
``streamdelay serve`` hands out on ``:reserve`` are counted per topic, flushed like a worker's
counts, and the dashboard's window (``readLateness``) has them."""

from __future__ import annotations

import time
import uuid

import pytest

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.telemetry.lateness import LatenessWindow, lateness_plan
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(60)


def _window(q: sd.Queue) -> LatenessWindow:
    found: LatenessWindow = drive_sync(q.client, lateness_plan(q.name, 15), 5.0)
    return found


def test_http_reserves_are_counted_in_the_lateness_window(shared_redis: RedisServer) -> None:
    name = f"wl{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url) as q:
        q.enqueue_many([sd.JobSpec("http.late", i, id=f"h{i}") for i in range(3)])
        base = f"/v1/queues/{name}"
        with WebServer(shared_redis.url, [name]) as server:  # its dispatcher promotes them
            taken = 0
            deadline = time.monotonic() + 20
            while taken < 3 and time.monotonic() < deadline:
                status, answer = server.request("POST", f"{base}/topics/http.late:reserve",
                                                {"count": 3, "wait_ms": 2000})
                assert status in (200, 204), answer
                for delivery in answer["deliveries"] if status == 200 else []:
                    taken += 1
                    assert server.request(
                        "POST", f"{base}/deliveries/{delivery['receipt']}:ack")[0] == 200
            assert taken == 3
            deadline = time.monotonic() + 15  # flushed within 5 s while serving
            while sum(_window(q).merged("http.late")) < 3:
                assert time.monotonic() < deadline, _window(q).topics
                time.sleep(0.2)
        assert sum(_window(q).merged("http.late")) == 3  # counted once
        # the acks are the throughput's "succeeded", flushed with the same record
        assert sum(_window(q).throughput("http.late")["ok"]) == 3


def test_http_reserves_of_a_staged_topic_count_by_priority(shared_redis: RedisServer) -> None:
    """A job of a staged topic handed out on ``:reserve`` counts under its priority too, as a
    worker's handler start does (``<topic>#p<priority>``, and the Prometheus histogram
    ``streamdelay_priority_lateness_seconds``: docs/priorities.md)."""
    name = f"wp{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url) as q:
        q.enqueue_many([sd.JobSpec("http.prio", i, id=f"p{i}", priority=9 if i else 2)
                        for i in range(3)])
        base = f"/v1/queues/{name}"
        with WebServer(shared_redis.url, [name]) as server:
            taken = 0
            deadline = time.monotonic() + 20
            while taken < 3 and time.monotonic() < deadline:
                status, answer = server.request("POST", f"{base}/topics/http.prio:reserve",
                                                {"count": 3, "wait_ms": 2000})
                assert status in (200, 204), answer
                for delivery in answer["deliveries"] if status == 200 else []:
                    taken += 1
                    assert server.request(
                        "POST", f"{base}/deliveries/{delivery['receipt']}:ack")[0] == 200
            assert taken == 3
            deadline = time.monotonic() + 15
            while sum(_window(q).merged("http.prio", priority="9")) < 2:
                assert time.monotonic() < deadline, _window(q).priorities
                time.sleep(0.2)
            text = server.request("GET", "/metrics", token="reader")[1]
        window = _window(q)
        assert sum(window.merged("http.prio", priority="9")) == 2
        assert sum(window.merged("http.prio", priority="2")) == 1
        assert sum(window.merged("http.prio")) == 3
        assert (f'streamdelay_priority_lateness_seconds_count{{priority="9",queue="{name}",'
                f'topic="http.prio"}} 2.0') in str(text)
