"""Inputs at the edges of the HTTP API, against a real ``streamdelay serve`` (docs/http.md#errors):
a resume position that is not one (``Last-Event-ID``, ``since``) and a query number that is not a
whole one are 400s naming the field; a JSON string with a lone UTF-16 surrogate is a 400 naming
where it is; an idle event follow sends a comment every ``--sse-keepalive`` seconds."""

from __future__ import annotations

import http.client
import time
import uuid
from urllib.parse import urlsplit

import pytest

import streamdelay as sd
from streamdelay.web.serve_settings import ServeSettings
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer
from tests.system.test_web_consumers import _call
from tests.system.test_web_results import _take

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(("query", "headers", "field"), [
    ("", {"Last-Event-ID": "zz,yy"}, "Last-Event-ID"),
    ("", {"Last-Event-ID": "12"}, None),  # epoch ms: a position (accepted)
    ("&since=99999999999999999999999", {}, "since"),
    ("&since=1-0.x", {}, "since"),
])
def test_a_resume_position_that_is_not_one_is_a_400_naming_it(
        web_server: WebServer, query: str, headers: dict[str, str], field: str | None) -> None:
    status, answer = web_server.request(
        "GET", f"/v1/queues/{web_server.queues[0]}/events?follow=false{query}", headers=headers)
    if field is None:
        assert status == 200, answer
        return
    assert status == 400, answer
    assert answer["error"]["code"] == "bad_request" and answer["error"]["field"] == field
    assert field in answer["error"]["message"]


@pytest.mark.parametrize("path", [
    "jobs/:result/nobody?wait_ms={}", "jobs?state=delayed&limit={}", "dead?limit={}",
    "search?scan={}"])
def test_a_query_number_that_is_not_a_whole_number_is_a_400_naming_it(
        web_server: WebServer, path: str) -> None:
    base = f"/v1/queues/{web_server.queues[0]}/"
    name = path.rsplit("&", 1)[-1].rsplit("?", 1)[-1].split("=")[0]
    for bad in ("1e3", "10.0", "1E1"):
        status, answer = web_server.request("GET", base + path.format(bad))
        assert status == 400, (bad, answer)
        assert answer["error"]["field"] == name and "whole number" in answer["error"]["message"]
    status, answer = web_server.request("GET", base + path.format("10"))
    assert status in (200, 404), answer  # the same parameter as a whole number: answered


def test_a_lone_surrogate_in_a_result_or_body_is_a_400_naming_where_it_is(
        web_server: WebServer) -> None:
    base = f"/v1/queues/{web_server.queues[1]}"
    assert _call(web_server, "POST", f"{base}/jobs", {"topic": "sur", "id": "s1",
                                                       "keep_result": 60})[0] == 201
    delivery = _take(web_server, base, "sur")
    ack = f"{base}/deliveries/{delivery['receipt']}:ack"
    status, answer = web_server.request("POST", ack, raw=b'{"result": "\\ud800"}')
    assert status == 400, answer
    assert answer["error"]["field"] == "result" and "surrogate" in answer["error"]["message"]
    status, answer = web_server.request("POST", f"{base}/jobs", raw=(
        b'{"topic": "sur", "body": {"names": ["ok", "\\udc00x"]}}'))
    assert status == 400 and answer["error"]["field"] == "body.names[1]", answer
    # a pair of surrogates is one character: stored and answered as the same text
    status, answer = web_server.request("POST", ack, raw=b'{"result": "\\ud83d\\ude00 done"}')
    assert (status, answer) == (200, {"outcome": "acked"})
    status, found = web_server.request("GET", f"{base}/jobs/s1/result")
    assert status == 200 and found["value"] == "\U0001F600 done"


def test_an_idle_follow_sends_a_comment_every_keepalive(shared_redis: RedisServer) -> None:
    # the default stays under the 30 s after which proxies close a silent connection
    assert ServeSettings(url=shared_redis.url, queues=("q",)).sse_keepalive <= 15
    name = f"ka{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url, events=True) as q, \
            WebServer(shared_redis.url, [name], "--sse-keepalive", "0.2") as server:
        q.enqueue("t", {}, id="k1", delay=3600)
        parts = urlsplit(server.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
        conn.request("GET", f"/v1/queues/{name}/events", headers=server.auth("reader"))
        answer = conn.getresponse()
        assert answer.status == 200
        lines: list[str] = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and sum(x.startswith(": keepalive")
                                                  for x in lines) < 3:
            lines.append(answer.readline().decode())
        conn.close()
        assert sum(line.startswith(": keepalive") for line in lines) >= 3, lines
        # the events still come, before and between the comments
        assert any(line.startswith("event: enqueued") for line in lines)
