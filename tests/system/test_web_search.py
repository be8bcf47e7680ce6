"""Search and bulk steering over HTTP against a live ``streamdelay serve``
(docs/http.md#search-and-bulk): filters, the cursor, dry run then action, scopes, and the
routes in the OpenAPI document."""

from __future__ import annotations

import urllib.parse
from typing import Any

from tests.support.web_server import WebServer


def _q(server: WebServer) -> str:
    return f"/v1/queues/{server.queues[1]}"


def _fill(server: WebServer, topic: str) -> None:
    jobs = [{"topic": topic, "id": f"{topic}-{i:02d}", "delay": 600 + i,
             "body": {"tenant": "acme" if i % 4 == 0 else "other", "n": i}} for i in range(20)]
    status, _ = server.request("POST", f"{_q(server)}/jobs:batch", {"jobs": jobs})
    assert status == 200


def _search(server: WebServer, token: str = "reader", **params: Any) -> tuple[int, Any]:
    query = urllib.parse.urlencode(params, doseq=True)
    return server.request("GET", f"{_q(server)}/search?{query}", token=token)


def test_search_pages_by_cursor_with_a_bounded_scan(web_server: WebServer) -> None:
    _fill(web_server, "s.find")
    found: list[str] = []
    cursor: str | None = None
    calls = 0
    while True:
        params: dict[str, Any] = {"topic": "s.find", "state": "delayed",
                                  "body": ["tenant=acme"], "scan": 6}
        if cursor:
            params["cursor"] = cursor
        status, page = _search(web_server, **params)
        assert status == 200 and page["examined"] <= 6
        found += [job["id"] for job in page["jobs"]]
        assert all(job["body"]["tenant"] == "acme" for job in page["jobs"])
        calls, cursor = calls + 1, page["cursor"]
        if cursor is None:
            break
    assert found == [f"s.find-{i:02d}" for i in range(0, 20, 4)] and calls >= 4
    status, error = _search(web_server, state="sleeping")
    assert status == 400 and error["error"]["field"] == "state"
    status, error = _search(web_server, body="=3")
    assert status == 422 and error["error"]["field"] == "body"
    status, error = _search(web_server, scan=10_001)
    assert status == 400


def test_bulk_dry_run_then_cancel_and_the_scopes(web_server: WebServer) -> None:
    _fill(web_server, "s.bulk")
    order = {"action": "cancel", "topic": "s.bulk", "state": "delayed",
             "body": ["tenant=other"]}
    status, _ = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                   {**order, "dry_run": True}, token="reader")
    assert status == 403  # a read token can search, not act, not even dry
    status, dry = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                     {**order, "dry_run": True}, token="writer")
    assert status == 200 and (dry["matched"], dry["changed"], dry["cursor"]) == (15, 0, None)
    status, page = _search(web_server, topic="s.bulk", state="delayed")
    assert len(page["jobs"]) == 20  # the dry run changed nothing
    status, done = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                      {**order, "scan": 12}, token="writer")
    assert status == 200 and done["changed"] == done["matched"] and done["cursor"]
    status, rest = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                      {**order, "cursor": done["cursor"]}, token="writer")
    assert status == 200 and rest["cursor"] is None
    assert done["changed"] + rest["changed"] == 15
    status, page = _search(web_server, topic="s.bulk", state="delayed")
    assert sorted(j["id"] for j in page["jobs"]) == [f"s.bulk-{i:02d}" for i in range(0, 20, 4)]
    status, _ = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                   {"action": "purge", "dry_run": True}, token="writer")
    assert status == 403  # replay and purge need admin, as their single-job routes
    status, error = web_server.request("POST", f"{_q(web_server)}/jobs:bulk",
                                       {"action": "cancel", "topic": "s.bulk"})
    assert status == 422 and error["error"]["field"] == "state"


def test_search_and_bulk_are_in_the_openapi_document(web_server: WebServer) -> None:
    status, doc = web_server.request("GET", "/openapi.json", token=None)
    assert status == 200
    search = doc["paths"]["/v1/queues/{queue}/search"]["get"]
    assert search["operationId"] == "searchJobs"
    assert {p["name"] for p in search["parameters"]} >= {"topic", "state", "error", "body",
                                                         "scan", "cursor"}
    bulk = doc["paths"]["/v1/queues/{queue}/jobs:bulk"]["post"]
    assert bulk["operationId"] == "bulkJobs" and "requestBody" in bulk
