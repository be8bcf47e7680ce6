"""HTTP consumers obey the consumer plans' rules: the job set of
tests/integration/test_consumer_drivers.py (the behaviour suite of both drivers) through
plain-HTTP consumers (urllib threads against a live ``streamdelay serve``, which drives the
async Reservation) ends as it does through each driver: the same attempts per job, the same
handled and dead sets (docs/http.md#consumers). And a long poll ends at once when the service
stops."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from typing import Any

import pytest

import streamdelay as sd
from tests.integration.test_consumer_drivers import (
    GROUP,
    TOPIC,
    Seen,
    assert_job_set_done,
    by_fails,
    enqueue_job_set,
    new_queue,
)
from tests.integration.test_pull import promote
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(150)


def _call(server: WebServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """Plain HTTP, as a consumer in any language would send it."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method, headers={
        "Authorization": f"Bearer {server.token('admin')}",
        "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=40) as answer:
            payload = answer.read()
            return answer.status, json.loads(payload) if payload else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def run_http_consumers(server: WebServer, queue: str, consumers: int = 3) -> dict[str,
                                                                                  list[int]]:
    """Consume the job set over HTTP until the topic is idle; the attempts seen per job."""
    runs: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()
    errors: list[BaseException] = []
    base = f"/v1/queues/{queue}"

    def consume(name: str) -> None:
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                status, answer = _call(server, "POST", f"{base}/topics/{TOPIC}:reserve", {
                    "group": GROUP, "consumer": name, "wait_ms": 300, "count": 4})
                assert status in (200, 204), answer
                for delivery in answer["deliveries"] if status == 200 else []:
                    with lock:
                        runs[delivery["id"]].append(delivery["attempt"])
                    action, delay = by_fails(delivery["id"], delivery["attempt"],
                                             delivery["body"])
                    receipt = delivery["receipt"]
                    if action == "ack":
                        settled = _call(server, "POST", f"{base}/deliveries/{receipt}:ack")
                    else:
                        settled = _call(server, "POST", f"{base}/deliveries/{receipt}:fail",
                                        {"error": "RuntimeError: boom", "retry_delay": delay})
                    assert settled[0] == 200, settled
                if status == 204:
                    row = _call(server, "GET", f"{base}/stats")[1]["topics"].get(TOPIC)
                    if row and row["delayed"] + row["ready"] + row["reserved"] == 0:
                        return
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=consume, args=(f"http-{i}",)) for i in range(consumers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return runs


def test_http_consumers_end_the_job_set_as_both_drivers_do(shared_redis: RedisServer) -> None:
    q = new_queue(shared_redis.url)
    try:
        enqueue_job_set(q)
        with WebServer(shared_redis.url, [q.name]) as server:
            runs = run_http_consumers(server, q.name)
        assert_job_set_done(q, Seen(runs=runs))
    finally:
        q.close()


def test_the_same_under_a_concurrency_limit(shared_redis: RedisServer) -> None:
    """With concurrency 2 on the topic (docs/limits.md), HTTP consumers reserving 4 at a time
    end the job set as both drivers do: the limit spends no attempt."""
    q = new_queue(shared_redis.url)
    try:
        q.limit(TOPIC, concurrency=2)
        enqueue_job_set(q)
        with WebServer(shared_redis.url, [q.name]) as server:
            runs = run_http_consumers(server, q.name)
        assert_job_set_done(q, Seen(runs=runs))
        assert q.stats().topics[TOPIC].leases == 0  # every settle gave its lease back
    finally:
        q.close()


def test_a_long_poll_ends_when_the_service_stops(shared_redis: RedisServer) -> None:
    server = WebServer(shared_redis.url, ["drainq"]).start()
    answers: list[tuple[int, Any]] = []
    poll = threading.Thread(target=lambda: answers.append(_call(
        server, "POST", "/v1/queues/drainq/topics/idle:reserve", {"wait_ms": 30000})))
    poll.start()
    time.sleep(1.0)  # the poll is waiting
    started = time.monotonic()
    assert server.stop() == 0
    poll.join(10)
    assert answers == [(204, None)]
    assert time.monotonic() - started < 8  # not the 30 s of the poll


def test_an_abandoned_long_poll_takes_no_job(web_server: WebServer) -> None:
    """A consumer that hangs up during a long poll: the service stops polling for it, so a job
    that becomes ready afterwards stays ready for the next consumer."""
    base = f"/v1/queues/{web_server.queues[0]}"
    body = json.dumps({"wait_ms": 20000}).encode()
    with socket.create_connection(("127.0.0.1", web_server.port), timeout=10) as sock:
        sock.sendall(f"POST {base}/topics/abandoned:reserve HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {web_server.token('consumer')}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                     .encode() + body)
        time.sleep(0.5)  # the poll is waiting
    time.sleep(2.5)  # the service notices within a poll slice (1 s)
    assert _call(web_server, "POST", f"{base}/jobs", {"topic": "abandoned", "id": "ab-1"})[0] \
        == 201
    time.sleep(1.5)
    assert _call(web_server, "GET", f"{base}/jobs/ab-1")[1]["state"] == "ready"


def test_reserve_never_hands_out_an_expired_job(shared_redis: RedisServer) -> None:
    """Expiry (docs/expiry.md) over HTTP: jobs whose deadline passed in their stream (promoted
    in time) or while delayed (the service's dispatcher) are never delivered by ``:reserve``;
    they are dead with the error ``expired`` and counted as outcome ``expired``."""
    q = new_queue(shared_redis.url)
    try:
        q.enqueue_many([sd.JobSpec(TOPIC, {"fails": 0}, id=job_id, expires=expires)
                        for job_id, expires in (("late-0", 0.15), ("late-1", 0.15),
                                                ("ok-0", None))])
        promote(q, 3)
        q.enqueue(TOPIC, {"fails": 0}, id="late-delayed", expires=0.15)
        time.sleep(0.4)
        with WebServer(shared_redis.url, [q.name]) as server:
            runs = run_http_consumers(server, q.name)
            text = server.request("GET", "/metrics", token="reader")[1]
        assert dict(runs) == {"ok-0": [1]}
        assert {d.id: (d.error, d.attempts) for d in q.dead_list(TOPIC)} == {
            "late-0": ("expired", 0), "late-1": ("expired", 0),
            "late-delayed": ("expired", 0)}
        assert (f'streamdelay_jobs_total{{group="{GROUP}",outcome="expired",queue="{q.name}",'
                f'topic="{TOPIC}"}} 2.0') in text, text[-3000:]
        assert (f'streamdelay_jobs_total{{group="",outcome="expired",queue="{q.name}",'
                f'topic="{TOPIC}"}} 1.0') in text, text[-3000:]
    finally:
        q.close()
