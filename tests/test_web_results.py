"""Results over HTTP (docs/http.md#results): an HTTP consumer posts a result with ``:ack``, and
``GET /v1/queues/{q}/jobs/{id}/result?wait_ms=`` answers 200 (the result), 204 (not ended within
wait_ms) or 404 (unknown), woken by the settle script while it waits."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.test_web_consumers import _call
from tests.web_server import WebServer

pytestmark = pytest.mark.timeout(120)


def _take(server: WebServer, base: str, topic: str) -> dict[str, Any]:
    status, answer = _call(server, "POST", f"{base}/topics/{topic}:reserve",
                           {"wait_ms": 5000, "count": 1})
    assert status == 200, answer
    [delivery] = answer["deliveries"]
    return delivery  # type: ignore[no-any-return]


def test_http_consumer_results_and_the_result_route(web_server: WebServer) -> None:
    base = f"/v1/queues/{web_server.queues[0]}"
    for job_id in ("r/1", "r2", "r3"):
        status, _ = _call(web_server, "POST", f"{base}/jobs",
                          {"topic": "res", "body": {"id": job_id}, "id": job_id,
                           "keep_result": 60})
        assert status == 201
    assert _call(web_server, "GET", f"{base}/jobs/r/1/result")[0] == 204  # not ended
    first = _take(web_server, base, "res")
    assert _call(web_server, "POST", f"{base}/deliveries/{first['receipt']}:ack",
                 {"result": {"total": 42, "items": [1, 2]}}) == (200, {"outcome": "acked"})
    status, found = _call(web_server, "GET", f"{base}/jobs/r/1/result")
    assert status == 200 and found["state"] == "succeeded" and found["id"] == "r/1"
    assert found["value"] == {"total": 42, "items": [1, 2]} and found["finished"] > 0
    # a waiting request is answered when a consumer acks (no poll on the client's side)
    waited: list[Any] = []
    waiter = threading.Thread(target=lambda: waited.append(
        _call(web_server, "GET", f"{base}/jobs/r2/result?wait_ms=20000")))
    waiter.start()
    time.sleep(0.3)
    second = _take(web_server, base, "res")
    start = time.monotonic()
    assert _call(web_server, "POST", f"{base}/deliveries/{second['receipt']}:ack",
                 {"result": "second"})[0] == 200
    waiter.join(10)
    assert waited and waited[0][0] == 200 and waited[0][1]["value"] == "second"
    assert time.monotonic() - start < 2
    third = _take(web_server, base, "res")
    assert _call(web_server, "POST", f"{base}/deliveries/{third['receipt']}:fail",
                 {"error": "bad input", "dead": True})[1] == {"outcome": "dead"}
    status, dead = _call(web_server, "GET", f"{base}/jobs/r3/result")
    assert status == 200 and dead["state"] == "dead" and dead["error"] == "bad input"
    assert dead["value"] is None
    status, missing = _call(web_server, "GET", f"{base}/jobs/nobody/result?wait_ms=5000")
    assert status == 404 and missing["error"]["code"] == "no_such_job"
    for bad in ("-1", "30001", "soon"):
        status, refused = _call(web_server, "GET", f"{base}/jobs/r2/result?wait_ms={bad}")
        assert status == 400 and "wait_ms" in str(refused), refused
    assert _call(web_server, "GET", f"{base}/jobs/r2")[0] == 404
