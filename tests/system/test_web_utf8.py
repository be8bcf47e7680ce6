"""A JSON body that is not UTF-8 is the client's mistake: every route that reads a JSON body
answers 400 with the field ``body`` (docs/http.md#errors), never a 500. The table covers every
operation the OpenAPI document gives a request body, so a new JSON route must join it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.web_server import WebServer

# operationId -> (the public path under /v1/queues/{queue} (POST), a body whose string value
# of a field the route knows holds a byte that is not UTF-8)
ROUTES = {
    "enqueue": ("/jobs", b'{"topic": "t\xff"}'),
    "enqueueBatch": ("/jobs:batch", b'{"jobs": [{"topic": "t\xff"}]}'),
    "rescheduleJob": ("/jobs/u8-1:reschedule", b'{"at": "2030-01-01T00:00:00\xff"}'),
    "replayDead": ("/dead:replay", b'{"id": "u8\xff"}'),
    "purgeDead": ("/dead:purge", b'{"topic": "t\xff"}'),
    "reserve": ("/topics/u8:reserve", b'{"group": "g\xff"}'),
    "fail": ("/deliveries/not-a-receipt:fail", b'{"error": "boom\xc3"}'),
    "ack": ("/deliveries/not-a-receipt:ack", b'{"result": "done\xc3"}'),
    "touch": ("/deliveries/not-a-receipt:touch", b'{"progress": "half\xff"}'),
    "bulkJobs": ("/jobs:bulk", b'{"action": "cancel", "topic": "t\xff", "dry_run": true}'),
    "limitTopic": ("/topics/u8:limit", b'{"rate": "1/s\xff"}'),
}
IN_A_KEY = b'{"\xe2\x82": 1}'  # a truncated UTF-8 sequence in a key


def test_the_table_holds_every_json_route(web_server: WebServer) -> None:
    status, document = web_server.request("GET", "/openapi.json")
    assert status == 200
    with_body = {operation["operationId"] for item in document["paths"].values()
                 for operation in item.values()
                 if isinstance(operation, dict) and "requestBody" in operation}
    assert with_body == set(ROUTES)


@pytest.mark.parametrize("where", ["in-a-value", "in-a-key"])
@pytest.mark.parametrize("operation", sorted(ROUTES))
def test_invalid_utf8_is_a_400_naming_the_body(web_server: WebServer, operation: str,
                                               where: str) -> None:
    base = f"/v1/queues/{web_server.queues[0]}"
    tracebacks = web_server.log_text().count("internal error")
    path, in_a_value = ROUTES[operation]
    raw = in_a_value if where == "in-a-value" else IN_A_KEY
    status, answer = web_server.request("POST", base + path, raw=raw)
    assert status == 400, answer
    error: dict[str, Any] = answer["error"]
    assert error["code"] == "bad_request" and error["field"] == "body", error
    assert "UTF-8" in error["message"] or "JSON" in error["message"], error
    # and no traceback: the service did not take it for its own fault
    assert web_server.log_text().count("internal error") == tracebacks
