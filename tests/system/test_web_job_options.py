"""Job options over HTTP (docs/http.md#priorities-keys-and-expiry): ``priority``, ``key`` and
``expires`` on ``jobs`` (fast path and route) and ``jobs:batch``, shown by the job's route; bad
values answered 4xx JSON naming the field. Against a live ``streamdelay serve``."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

import pytest

import streamdelay as sd
from tests.integration.test_pull import running_dispatcher
from tests.support.web_server import WebServer
from tests.system.test_limits import wait_for

pytestmark = pytest.mark.timeout(120)


def _q(server: WebServer, which: int = 0) -> str:
    return f"/v1/queues/{server.queues[which]}"


@pytest.mark.parametrize("suffix", ["", "/"])  # "": web/fastpath.py, "/": the Litestar route
def test_options_are_taken_and_shown(web_server: WebServer, suffix: str) -> None:
    base = _q(web_server)
    status, made = web_server.request("POST", f"{base}/jobs{suffix}", {
        "topic": "opt", "id": f"o{suffix and 'r'}", "delay": "1m", "priority": 8,
        "key": "tenant-7", "expires": "30s"})
    assert status == 201 and made["id"] == f"{{tenant-7}}o{suffix and 'r'}"
    quoted = urllib.parse.quote(made["id"], safe="")
    status, job = web_server.request("GET", f"{base}/jobs/{quoted}", token="reader")
    assert status == 200
    assert (job["priority"], job["key"], job["expires_at"]) == (8, "tenant-7",
                                                                made["due"] + 30_000)
    assert web_server.request("DELETE", f"{base}/jobs/{quoted}")[0] == 200


def test_a_job_without_options_shows_the_defaults(web_server: WebServer) -> None:
    base = _q(web_server)
    status, made = web_server.request("POST", f"{base}/jobs", {"topic": "opt", "delay": 60})
    assert status == 201
    status, job = web_server.request("GET", f"{base}/jobs/{made['id']}", token="reader")
    assert (job["priority"], job["key"], job["expires_at"]) == (5, None, None)


def test_the_batch_carries_options(web_server: WebServer) -> None:
    base = _q(web_server)
    status, answer = web_server.request("POST", f"{base}/jobs:batch", {"jobs": [
        {"topic": "opt", "id": "b-plain", "delay": 60},
        {"topic": "opt", "id": "b-key", "delay": 60, "key": "acme", "priority": 1},
        {"topic": "opt", "id": "b-exp", "delay": 60, "expires": 2.5}]})
    assert status == 200
    ids = [r["id"] for r in answer["results"]]
    assert ids == ["b-plain", "{acme}b-key", "b-exp"]
    shown = []
    for job_id in ids:
        quoted = urllib.parse.quote(job_id, safe="")
        status, job = web_server.request("GET", f"{base}/jobs/{quoted}", token="reader")
        shown.append((job["priority"], job["key"], job["expires_at"]))
    due = answer["results"][2]["due"]
    assert shown == [(5, None, None), (1, "acme", None), (5, None, due + 2500)]


# 400: the body does not match the documented schema; 422: the library refuses the value
@pytest.mark.parametrize(("extra", "status", "field"), [
    ({"priority": 10}, 400, "priority"), ({"priority": -1}, 400, "priority"),
    ({"priority": "5"}, 400, "priority"), ({"priority": 1.5}, 400, "priority"),
    ({"key": ""}, 400, "key"), ({"key": "k" * 65}, 400, "key"), ({"key": "a b"}, 400, "key"),
    ({"expires": 0}, 400, "expires"), ({"expires": -3}, 400, "expires"),
    ({"expires": "soon"}, 400, "expires"), ({"expires": 1e12}, 400, "expires"),
    ({"expires": "0s"}, 422, "expires"), ({"expires": "99999d"}, 422, "expires"),
    ({"key": "a", "id": "{b}x"}, 422, "id"), ({"id": "{a}x"}, 422, "id"),
])
@pytest.mark.parametrize("suffix", ["", "/"])
def test_bad_options_are_refused_naming_the_field(web_server: WebServer, extra: dict[str, Any],
                                                  status: int, field: str, suffix: str) -> None:
    base = _q(web_server)
    got, error = web_server.request("POST", f"{base}/jobs{suffix}", {"topic": "opt", **extra})
    assert (got, error["error"]["field"]) == (status, field), error
    got, error = web_server.request("POST", f"{base}/jobs:batch",
                                    {"jobs": [{"topic": "opt"}, {"topic": "opt", **extra}]})
    assert (got, error["error"]["field"]) == (status, f"jobs[1].{field}"), error


def test_the_document_declares_the_options_with_their_bounds(web_server: WebServer) -> None:
    status, document = web_server.request("GET", "/openapi.json", token=None)
    assert status == 200
    body = document["components"]["schemas"]["EnqueueBody"]["properties"]
    priority = body["priority"]["anyOf"][0]
    assert (priority["minimum"], priority["maximum"]) == (0, 9)
    assert body["key"]["anyOf"][0]["pattern"].startswith("^[A-Za-z0-9")
    [given] = [kind for kind in body["expires"]["anyOf"] if kind.get("type") != "null"]
    numbers = [kind for kind in given["anyOf"] if kind.get("type") == "number"]
    assert numbers and numbers[0]["exclusiveMinimum"] == 0
    shown = document["components"]["schemas"]["JobInfo"]["properties"]
    assert {"priority", "key", "expires_at"} <= set(shown)


def test_an_id_of_neither_form_is_refused_naming_the_id(web_server: WebServer) -> None:
    base = _q(web_server)
    for bad in ("a{b}c", "{a}", "{}x", "{a b}x"):
        status, error = web_server.request("GET", f"{base}/jobs/{urllib.parse.quote(bad)}")
        assert status in (400, 422) and error["error"]["field"] == "id", (bad, error)


def test_the_dashboard_job_page_shows_the_options(web_server: WebServer) -> None:
    base = _q(web_server)
    status, made = web_server.request("POST", f"{base}/jobs", {
        "topic": "opt", "delay": 60, "priority": 2, "key": "dash-key", "expires": 90})
    assert status == 201
    queue = web_server.queues[0]
    status, page = web_server.request(
        "GET", f"/q/{queue}/job?{urllib.parse.urlencode({'id': made['id']})}")
    assert status == 200 and made["id"] in page
    for label, value in (("priority", "2"), ("key", "dash-key")):
        assert re.search(rf">{label}<.*?>{value}<", page, re.DOTALL), label
    assert ">expires<" in page


def test_the_ready_listing_and_the_search_show_jobs_waiting_in_lanes(
        web_server: WebServer) -> None:
    """Jobs of a staged topic wait in their keys' lanes (record state r): the HTTP listing of
    ready jobs pages through them (cursors quoted as any), and the search finds them."""
    base = _q(web_server)
    status, _ = web_server.request("POST", f"{base}/jobs:batch", {"jobs": [
        {"topic": "lane", "id": f"l{i}", "key": f"tenant-{i % 2}", "priority": 1 + i,
         "body": {"n": i}} for i in range(5)]})
    assert status in (200, 201)
    with sd.Queue(web_server.queues[0], url=web_server.redis_url) as q, running_dispatcher(q):
        wait_for(lambda: q.stats().topics["lane"].ready == 5, 10, "the jobs in their lanes")
    seen, cursor = [], None
    for _ in range(10):
        query = "state=ready&topic=lane&limit=2" + (
            f"&cursor={urllib.parse.quote(cursor, safe='')}" if cursor else "")
        status, page = web_server.request("GET", f"{base}/jobs?{query}", token="reader")
        assert status == 200 and len(page["jobs"]) <= 2
        seen += [(job["id"], job["state"]) for job in page["jobs"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert sorted(seen) == sorted((f"{{tenant-{i % 2}}}l{i}", "ready") for i in range(5))
    status, found = web_server.request("GET", f"{base}/search?state=ready&topic=lane&body=n%3D3",
                                       token="reader")
    assert status == 200 and [job["id"] for job in found["jobs"]] == ["{tenant-1}l3"]
