"""The JSON API against a live ``streamdelay serve`` (docs/http.md): producer and operator
routes, the consumer protocol, errors naming the field, scopes, body limits."""

from __future__ import annotations

import http.cookiejar
import json
import re
import socket
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest

from streamdelay.web.auth import SESSION_COOKIE
from tests.support.web_server import WebServer


def _q(server: WebServer) -> str:
    return f"/v1/queues/{server.queues[0]}"


def _reserve(server: WebServer, topic: str, **body: Any) -> tuple[int, Any]:
    return server.request("POST", f"{_q(server)}/topics/{topic}:reserve", body or {},
                          token="consumer")


def _settle(server: WebServer, receipt: str, action: str, body: Any = None) -> tuple[int, Any]:
    return server.request("POST", f"{_q(server)}/deliveries/{receipt}:{action}", body,
                          token="consumer")


def test_enqueue_created_then_existing(web_server: WebServer) -> None:
    base = _q(web_server)
    status, first = web_server.request("POST", f"{base}/jobs", {
        "topic": "mail.send", "body": {"to": "a@example.com"}, "id": "mail-1", "delay": "10m",
        "ttr": 30, "max_attempts": 4, "backoff": [1, 5], "headers": {"k": "v"}})
    assert status == 201 and first["created"] is True and first["id"] == "mail-1"
    status, again = web_server.request("POST", f"{base}/jobs", {"topic": "mail.send",
                                                                "id": "mail-1"})
    assert status == 200 and again["created"] is False and again["due"] == first["due"]
    status, job = web_server.request("GET", f"{base}/jobs/mail-1", token="reader")
    assert status == 200
    assert (job["state"], job["topic"], job["body"], job["max_attempts"], job["ttr"],
            job["headers"]) == ("delayed", "mail.send", {"to": "a@example.com"}, 4, 30.0,
                                {"k": "v"})
    assert job["due"] - job["created"] == 600_000


def test_at_takes_epoch_seconds_and_iso_times(web_server: WebServer) -> None:
    base = _q(web_server)
    status, by_epoch = web_server.request("POST", f"{base}/jobs", {"topic": "t",
                                                                   "at": 4102444800})
    assert status == 201 and by_epoch["due"] == 4102444800000
    status, by_iso = web_server.request("POST", f"{base}/jobs", {
        "topic": "t", "at": "2100-01-01T01:00:00+01:00"})
    assert status == 201 and by_iso["due"] == 4102444800000
    status, error = web_server.request("POST", f"{base}/jobs", {"topic": "t",
                                                                "at": "next tuesday"})
    assert status == 422 and error["error"]["field"] == "at"
    status, error = web_server.request("POST", f"{base}/jobs", {
        "topic": "t", "at": "2100-01-01T00:00:00"})
    assert status == 422 and error["error"]["field"] == "at" and "naive" in \
        error["error"]["message"]


# 400: the body does not match the documented schema (Litestar/msgspec check it); 422: the
# schema allows it but the library refuses the value (docs/http.md#errors)
@pytest.mark.parametrize(("body", "status", "field"), [
    ({"topic": ""}, 400, "topic"),
    ({"topic": "bad topic"}, 400, "topic"),
    ({"topic": "t", "delay": -1}, 400, "delay"),
    ({"topic": "t", "delay": "soon"}, 400, "delay"),
    ({"topic": "t", "delay": "99999d"}, 422, "delay"),
    ({"topic": "t", "ttr": 0.1}, 422, "ttr"),
    ({"topic": "t", "max_attempts": 0}, 400, "max_attempts"),
    ({"topic": "t", "id": "has space"}, 400, "id"),
    ({"topic": "t", "headers": {"k": 1}}, 400, "headers"),
    ({"topic": "t", "headers": {"k": "v" * 5000}}, 422, "headers"),
    ({"topic": "t", "backoff": []}, 400, "backoff"),
    ({"topic": "t", "delay": 1, "at": 4102444800}, 422, None),
    ({"topic": "t", "at": 1}, 422, "at"),
    ({"topic": "t", "body": float("inf")}, 400, None),
    ({"topic": 5}, 400, "topic"),
    ({"body": 1}, 400, "topic"),
    ({"topic": "t", "colour": "red"}, 400, "colour"),
    ([1, 2], 400, None),
])
def test_bad_enqueue_bodies_name_the_field(web_server: WebServer, body: Any, status: int,
                                           field: str | None) -> None:
    got, error = web_server.request("POST", f"{_q(web_server)}/jobs", body)
    assert got == status, error
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message", "field"}
    if field is not None:
        assert error["error"]["field"] == field, error
    assert "Traceback" not in json.dumps(error)


def test_not_json_and_unserved_queues(web_server: WebServer) -> None:
    status, error = web_server.request("POST", f"{_q(web_server)}/jobs", raw=b"{oops")
    assert status == 400 and error["error"]["code"] == "bad_request"
    status, error = web_server.request("POST", "/v1/queues/elsewhere/jobs", {"topic": "t"})
    assert status == 404 and error["error"] == {
        "code": "no_such_queue", "message": "queue: 'elsewhere' is not served here",
        "field": "queue"}
    status, error = web_server.request("GET", "/v1/nothing-here")
    assert status == 404 and error["error"]["code"] == "not_found"


def test_batch_in_order_and_a_bad_job_writes_nothing(web_server: WebServer) -> None:
    base = _q(web_server)
    jobs = [{"topic": "b", "id": f"batch-{i}", "body": i, "delay": 60} for i in range(5)]
    status, answer = web_server.request("POST", f"{base}/jobs:batch", {"jobs": jobs})
    assert status == 200
    assert [r["id"] for r in answer["results"]] == [f"batch-{i}" for i in range(5)]
    assert all(r["created"] for r in answer["results"])
    bad = [{"topic": "b", "id": "batch-new"}, {"topic": "b", "ttr": 0.5}]
    status, error = web_server.request("POST", f"{base}/jobs:batch", {"jobs": bad})
    assert status == 422 and error["error"]["field"] == "jobs[1].ttr"
    assert error["error"]["message"].startswith("jobs[1]: ttr:")
    bad = [{"topic": "b", "id": "batch-new"}, {"topic": "b", "delay": -5}]
    status, error = web_server.request("POST", f"{base}/jobs:batch", {"jobs": bad})
    assert status == 400 and error["error"]["field"] == "jobs[1].delay"
    assert web_server.request("GET", f"{base}/jobs/batch-new")[0] == 404


def test_ids_with_slashes_and_colons(web_server: WebServer) -> None:
    base = _q(web_server)
    # (name@<digits> is a schedule tick's: tests/system/test_tick_ids.py)
    job_id = "tenant/42:invoice@v7"
    assert web_server.request("POST", f"{base}/jobs", {"topic": "t", "id": job_id,
                                                       "delay": 600})[0] == 201
    for path in (job_id, job_id.replace("/", "%2F")):
        status, job = web_server.request("GET", f"{base}/jobs/{path}")
        assert status == 200 and job["id"] == job_id
    status, done = web_server.request("POST", f"{base}/jobs/{job_id}:reschedule",
                                      {"delay": "1h"})
    assert status == 200 and done == {"id": job_id, "done": True}
    status, job = web_server.request("GET", f"{base}/jobs/{job_id}")
    assert job["due"] - job["created"] >= 3_600_000
    assert web_server.request("DELETE", f"{base}/jobs/{job_id}")[0] == 200
    status, error = web_server.request("DELETE", f"{base}/jobs/{job_id}")
    assert status == 404 and error["error"]["code"] == "no_such_job"
    status, error = web_server.request("POST", f"{base}/jobs/{job_id}:reschedule",
                                       {"delay": 5})
    assert status == 404


def test_listing_pages_and_stats(web_server: WebServer) -> None:
    base = f"/v1/queues/{web_server.queues[1]}"
    web_server.request("POST", f"{base}/jobs:batch", {"jobs": [
        {"topic": "page", "id": f"p{i}", "delay": 100 + i} for i in range(5)]})
    seen, cursor = [], None
    for _ in range(5):
        query = "state=delayed&topic=page&limit=2" + (f"&cursor={cursor}" if cursor else "")
        status, page = web_server.request("GET", f"{base}/jobs?{query}", token="reader")
        assert status == 200
        seen += [job["id"] for job in page["jobs"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert seen == [f"p{i}" for i in range(5)]
    status, stats = web_server.request("GET", f"{base}/stats", token="reader")
    assert status == 200 and stats["topics"]["page"]["delayed"] == 5
    assert web_server.request("GET", f"{base}/jobs?state=sleeping")[1]["error"]["field"] == \
        "state"
    assert web_server.request("GET", f"{base}/jobs?state=delayed&limit=0")[0] == 400


def test_pause_and_resume_show_in_stats(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "pz", "delay": 600})
    status, answer = web_server.request("POST", f"{base}/topics/pz:pause")
    assert status == 200 and answer == {"topic": "pz", "paused": True, "changed": True}
    assert web_server.request("POST", f"{base}/topics/pz:pause")[1]["changed"] is False
    assert web_server.request("GET", f"{base}/stats")[1]["topics"]["pz"]["paused"] is True
    status, answer = web_server.request("POST", f"{base}/topics/pz:resume")
    assert answer == {"topic": "pz", "paused": False, "changed": True}
    assert web_server.request("GET", f"{base}/stats")[1]["topics"]["pz"]["paused"] is False


def test_a_limit_with_key_limits_is_set_shown_and_cleared(web_server: WebServer) -> None:
    """docs/limits.md#key-limits over HTTP: the whole limit of a topic in one call."""
    base = _q(web_server)
    status, answer = web_server.request("POST", f"{base}/topics/lk:limit", {
        "concurrency": 4, "key_concurrency": 2, "key_rate": "10/m"}, token="admin")
    assert status == 200 and answer == {"topic": "lk", "rate": None, "concurrency": 4,
                                        "key_rate": "10/m", "key_concurrency": 2,
                                        "changed": True}
    status, listed = web_server.request("GET", f"{base}/limits")
    assert status == 200 and {"topic": "lk", "rate": None, "concurrency": 4, "key_rate": "10/m",
                              "key_concurrency": 2, "changed": None} in listed["limits"]
    row = web_server.request("GET", f"{base}/stats")[1]["topics"]["lk"]
    assert (row["key_concurrency"], row["key_rate"]) == (2, "10/m")
    status, error = web_server.request("POST", f"{base}/topics/lk:limit", {"key_rate": "fast"},
                                       token="admin")
    assert status == 422 and error["error"]["field"] == "key_rate"
    status, error = web_server.request("POST", f"{base}/topics/lk:limit",
                                       {"key_concurrency": 0}, token="admin")
    assert status == 400 and "key_concurrency" in error["error"]["message"]
    status, answer = web_server.request("POST", f"{base}/topics/lk:limit", None, token="admin")
    assert status == 200 and answer["changed"] is True and answer["key_concurrency"] is None


def test_reserve_takes_a_staged_topic_by_priority_in_key_turns_within_key_limits(
        web_server: WebServer) -> None:
    """docs/priorities.md: the HTTP consumer takes through the engine's take like a worker."""
    base = _q(web_server)
    web_server.request("POST", f"{base}/topics/kt:limit", {"key_concurrency": 1},
                       token="admin")
    jobs = [{"topic": "kt", "body": i, "id": f"a{i}", "key": "acme", "priority": 5}
            for i in range(3)] + [{"topic": "kt", "body": 9, "id": "a9", "key": "acme",
                                   "priority": 9}, {"topic": "kt", "body": 0, "id": "b0",
                                                    "key": "bolt"}]
    status, _ = web_server.request("POST", f"{base}/jobs:batch", {"jobs": jobs})
    assert status in (200, 201)
    got: list[str] = []
    deadline = time.monotonic() + 20
    while len(got) < 2:  # the dispatcher of the service promotes them
        assert time.monotonic() < deadline
        status, answer = _reserve(web_server, "kt", wait_ms=500, count=10)
        got += [d["id"] for d in (answer or {}).get("deliveries", [])]
    assert sorted(got) == ["{acme}a9", "{bolt}b0"]  # acme's best, and one job per key
    status, answer = _reserve(web_server, "kt", wait_ms=0, count=10)
    assert status == 204  # acme holds its one lease


def test_reserve_ack_and_an_empty_poll(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "c.ack", "body": {"n": 1},
                                                "id": "ack-1", "headers": {"h": "1"}})
    status, answer = _reserve(web_server, "c.ack", wait_ms=5000, count=10)
    assert status == 200 and len(answer["deliveries"]) == 1
    delivery = answer["deliveries"][0]
    assert (delivery["id"], delivery["topic"], delivery["body"], delivery["headers"],
            delivery["attempt"], delivery["ttr"]) == ("ack-1", "c.ack", {"n": 1}, {"h": "1"},
                                                      1, 60.0)
    assert web_server.request("GET", f"{base}/jobs/ack-1")[1]["state"] == "reserved"
    assert _settle(web_server, delivery["receipt"], "touch") == (200, {"outcome": "touched"})
    assert _settle(web_server, delivery["receipt"], "ack") == (200, {"outcome": "acked"})
    assert web_server.request("GET", f"{base}/jobs/ack-1")[0] == 404
    status, error = _settle(web_server, delivery["receipt"], "ack")
    assert status == 409 and error["error"]["code"] == "stale_receipt"
    assert error["error"]["field"] == "receipt"
    started = time.monotonic()
    assert _reserve(web_server, "c.ack", wait_ms=300) == (204, None)
    assert time.monotonic() - started >= 0.3


def test_a_long_poll_returns_a_job_that_becomes_due(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "c.poll", "id": "poll-1",
                                                "delay": 1.0})
    status, answer = _reserve(web_server, "c.poll", wait_ms=15000)
    assert status == 200 and answer["deliveries"][0]["id"] == "poll-1"
    _settle(web_server, answer["deliveries"][0]["receipt"], "ack")


def test_fail_retries_then_dead_then_replay_and_purge(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "c.fail", "id": "f-1",
                                                "max_attempts": 2, "backoff": [0]})
    status, answer = _reserve(web_server, "c.fail", wait_ms=5000)
    first = answer["deliveries"][0]
    assert _settle(web_server, first["receipt"], "fail", {"error": "boom 1"}) == \
        (200, {"outcome": "retried"})
    status, answer = _reserve(web_server, "c.fail", wait_ms=5000)
    second = answer["deliveries"][0]
    assert second["attempt"] == 2
    assert _settle(web_server, second["receipt"], "fail", {"error": "boom 2"}) == \
        (200, {"outcome": "dead"})
    status, dead = web_server.request("GET", f"{base}/dead?topic=c.fail", token="reader")
    assert status == 200 and [(d["id"], d["attempts"]) for d in dead["jobs"]] == [("f-1", 2)]
    assert "boom 2" in dead["jobs"][0]["error"]
    assert web_server.request("POST", f"{base}/dead:replay", {"id": "f-1"},
                              token="writer")[0] == 403
    assert web_server.request("POST", f"{base}/dead:replay", {"id": "f-1"}) == \
        (200, {"count": 1})
    status, answer = _reserve(web_server, "c.fail", wait_ms=5000)
    third = answer["deliveries"][0]
    assert third["attempt"] == 1  # a replay resets the attempts
    assert _settle(web_server, third["receipt"], "fail", {"error": "x", "dead": True}) == \
        (200, {"outcome": "dead"})
    assert web_server.request("POST", f"{base}/dead:purge", {"topic": "c.fail"}) == \
        (200, {"count": 1})


def test_a_silent_consumer_loses_its_job_after_the_ttr(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "c.ttr", "id": "ttr-1", "ttr": 1})
    status, answer = _reserve(web_server, "c.ttr", wait_ms=5000, consumer="sleepy")
    stale = answer["deliveries"][0]["receipt"]
    status, answer = _reserve(web_server, "c.ttr", wait_ms=15000, consumer="awake")
    assert status == 200
    fresh = answer["deliveries"][0]
    assert (fresh["id"], fresh["attempt"]) == ("ttr-1", 2)
    status, error = _settle(web_server, stale, "ack")
    assert status == 409 and error["error"]["code"] == "stale_receipt"
    assert _settle(web_server, fresh["receipt"], "ack")[0] == 200


def test_cancel_while_reserved_makes_the_receipt_stale(web_server: WebServer) -> None:
    base = _q(web_server)
    web_server.request("POST", f"{base}/jobs", {"topic": "c.cancel", "id": "cx-1"})
    receipt = _reserve(web_server, "c.cancel", wait_ms=5000)[1]["deliveries"][0]["receipt"]
    assert web_server.request("DELETE", f"{base}/jobs/cx-1")[0] == 200
    assert _settle(web_server, receipt, "touch")[0] == 409
    assert _settle(web_server, receipt, "fail", {"error": "late"})[0] == 409


@pytest.mark.parametrize(("body", "field"), [
    ({"wait_ms": 30_001}, "wait_ms"), ({"wait_ms": -1}, "wait_ms"), ({"count": 0}, "count"),
    ({"count": 101}, "count"), ({"group": "bad group"}, "group"),
    ({"consumer": "bad consumer"}, "consumer"), ({"extra": 1}, "extra"),
])
def test_bad_reserve_bodies(web_server: WebServer, body: dict[str, Any], field: str) -> None:
    status, error = _reserve(web_server, "c.bad", **body)
    assert status in (400, 422) and error["error"]["field"] == field, error


def test_bad_receipts_and_fail_bodies(web_server: WebServer) -> None:
    status, error = _settle(web_server, "not-a-receipt", "ack")
    assert status == 422 and error["error"]["field"] == "receipt"
    status, error = _settle(web_server, "x", "fail", {"retry_delay": 1})
    assert status == 400 and error["error"]["field"] == "error"


def test_a_topic_served_by_another_group_is_a_conflict(web_server: WebServer) -> None:
    _reserve(web_server, "c.group", group="first")
    status, error = _reserve(web_server, "c.group", group="second")
    assert status == 409 and error["error"]["code"] == "group_taken"


ROUTES = [  # (method, path, body, the scope it needs)
    ("POST", "/jobs", {"topic": "s"}, "write"),
    ("POST", "/jobs:batch", {"jobs": [{"topic": "s"}]}, "write"),
    ("GET", "/jobs/x", None, "read"),
    ("DELETE", "/jobs/x", None, "write"),
    ("POST", "/jobs/x:reschedule", {"delay": 1}, "write"),
    ("GET", "/jobs?state=dead", None, "read"),
    ("GET", "/stats", None, "read"),
    ("GET", "/dead", None, "read"),
    ("POST", "/dead:replay", {"id": "x"}, "admin"),
    ("POST", "/dead:purge", {"id": "x"}, "admin"),
    ("POST", "/topics/s:pause", None, "admin"),
    ("POST", "/topics/s:resume", None, "admin"),
    ("POST", "/topics/s:limit", {"key_concurrency": 2}, "admin"),
    ("GET", "/limits", None, "read"),
    ("POST", "/topics/s:reserve", {}, "consume"),
    ("POST", "/deliveries/r:ack", None, "consume"),
    ("POST", "/deliveries/r:fail", {"error": "e"}, "consume"),
    ("POST", "/deliveries/r:touch", None, "consume"),
]
HOLDERS = {"read": ("reader", "consumer"), "write": ("writer", "reader"),
           "consume": ("consumer", "writer"), "admin": ("admin", "writer")}


@pytest.mark.parametrize(("method", "path", "body", "scope"), ROUTES)
def test_every_route_checks_its_scope(web_server: WebServer, method: str, path: str,
                                      body: Any, scope: str) -> None:
    url = f"/v1/queues/{web_server.queues[1]}{path}"
    holder, other = HOLDERS[scope]
    status, error = web_server.request(method, url, body, token=None)
    assert status == 401 and error["error"]["code"] == "unauthorized"
    status, error = web_server.request(method, url, body, token=None, headers={
        "Authorization": "Bearer " + "z" * 32})
    assert status == 401 and "not valid" in error["error"]["message"]
    status, error = web_server.request(method, url, body, token=other)
    assert status == 403 and error["error"]["code"] == "forbidden"
    status, _ = web_server.request(method, url, body, token=holder)
    assert status not in (401, 403)


def _announce_big_body(server: WebServer, path: str, size: int) -> tuple[int, Any]:
    """Send the head of a request announcing ``size`` bytes and a first chunk; the service
    answers before the rest (a client that kept sending would see the connection reset)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Authorization: Bearer {server.token('admin')}\r\n"
                      f"Content-Length: {size}\r\n\r\n").encode() + b'{"topic": "t"')
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_oversized_and_deeply_nested_bodies(web_server: WebServer) -> None:
    url = f"{_q(web_server)}/jobs"
    status, error = _announce_big_body(web_server, url, 8 * 1024 * 1024 + 1)
    assert status == 413 and error["error"] == {
        "code": "too_large", "field": "body",
        "message": "the request body is larger than the service accepts (--max-body-bytes)"}
    deep = b'{"topic": "t", "body": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    status, error = web_server.request("POST", url, raw=deep)
    assert status == 400 and error["error"]["code"] == "too_deep"
    # within the request's limit but deeper than a job body may be: the library says so
    body = b'{"topic": "t", "body": ' + b"[" * 140 + b"]" * 140 + b"}"
    status, error = web_server.request("POST", url, raw=body)
    assert status == 422 and error["error"]["field"] == "body"


def test_a_session_cookie_reads_v1_but_never_changes_it(web_server: WebServer) -> None:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(web_server.url + "/login", timeout=10) as page:
        csrf = re.search(r'name="_csrf_token" value="([^"]+)"', page.read().decode())
    assert csrf is not None
    data = urllib.parse.urlencode({"token": web_server.token("admin"),
                                   "_csrf_token": csrf.group(1)}).encode()
    with opener.open(urllib.request.Request(web_server.url + "/login", data=data),
                     timeout=10):
        pass
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
    assert SESSION_COOKIE in cookie
    base = _q(web_server)
    status, _ = web_server.request("GET", f"{base}/stats", token=None,
                                   headers={"Cookie": cookie})
    assert status == 200
    # /v1 is exempt from the CSRF check, so a cookie alone never changes anything there
    status, _ = web_server.request("POST", f"{base}/jobs", {"topic": "t"}, token=None,
                                   headers={"Cookie": cookie})
    assert status == 401


@pytest.mark.parametrize(("body", "token"), [
    ({"topic": "par", "id": "par-1", "delay": 60}, "writer"),
    ({"topic": "par", "id": "par-1"}, "writer"),
    ({"topic": "par", "ttr": 0.5}, "writer"),
    ({"topic": "bad topic"}, "writer"),
    ({"topic": "par", "extra": 1}, "writer"),
    (None, "writer"),
    ({"topic": "par"}, "reader"),
    ({"topic": "par"}, None),
])
def test_the_enqueue_fast_path_answers_as_the_route(web_server: WebServer, body: Any,
                                                    token: str | None) -> None:
    """``/jobs`` is answered by web/fastpath.py, ``/jobs/`` by the Litestar route."""
    queues = web_server.queues
    answers = []
    for queue, suffix in ((queues[0], ""), (queues[1], "/")):
        raw = b"" if body is None else None
        answers.append(web_server.request("POST", f"/v1/queues/{queue}/jobs{suffix}", body,
                                          token=token, raw=raw))
    (fast_status, fast), (route_status, route) = answers
    assert fast_status == route_status
    if fast_status < 300:
        assert set(fast) == set(route) and fast["created"] == route["created"]
    else:
        assert fast == route


@pytest.mark.parametrize("action", ["ack", "touch", "fail"])
def test_the_settle_fast_path_answers_as_the_route(web_server: WebServer, action: str) -> None:
    """``/deliveries/R:ack`` goes through web/fastpath.py; a receipt the fast path's pattern
    does not take (a ``.`` in it) reaches the Litestar route, which refuses it by its
    pattern."""
    base = f"/v1/queues/{web_server.queues[0]}"
    body = {"error": "x"} if action == "fail" else None
    status, error = web_server.request("POST", f"{base}/deliveries/bad.receipt:{action}", body,
                                       token="consumer")
    assert status == 400 and error["error"]["field"] == "receipt"
    status, error = web_server.request("POST", f"{base}/deliveries/badreceipt:{action}", body,
                                       token="consumer")
    assert status == 422 and error["error"]["field"] == "receipt"
    assert web_server.request("POST", f"{base}/deliveries/badreceipt:{action}", body,
                              token="writer")[0] == 403
