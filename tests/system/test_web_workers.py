"""``GET /v1/queues/{queue}/workers`` of a live ``streamdelay serve``: a real worker process and
an HTTP consumer listed, one worker by name, 404 for a name no live worker has, and the read
scope (docs/http.md#workers, docs/operations.md#workers)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import streamdelay as sd
from tests.support.web_server import WebServer
from tests.system.test_fleet_workers import fleet_worker, listed
from tests.system.test_metrics_prometheus import running, wait_for


def call(server: WebServer, method: str, path: str, token: str = "reader",
         body: Any = None) -> tuple[int, Any]:
    """Plain HTTP with the named token; the status and the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method, headers={
        **server.auth(token), "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            payload = answer.read()
            return answer.status, json.loads(payload) if payload else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_workers_route_lists_workers_and_http_consumers(redis_url: str,
                                                        queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), WebServer(redis_url, [queue_name]) as server, \
            sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: [w.pid for w in listed(q)] == [worker.pid])
        job = q.enqueue("f.slow", {"ms": 30_000}).id
        wait_for("its job shown", lambda: listed(q)[0].running == (job,))
        base = f"/v1/queues/{queue_name}"
        status, reply = call(server, "GET", f"{base}/workers")
        assert status == 200
        [shown] = reply["workers"]
        assert shown["pid"] == worker.pid and shown["kind"] == "worker"
        assert shown["state"] == "running" and shown["topics"] == ["f.slow"]
        assert [r["id"] for r in shown["running"]] == [job] and shown["running_count"] == 1
        status, one = call(server, "GET", f"{base}/workers/{shown['name']}")
        assert status == 200 and one["name"] == shown["name"] and one["pid"] == worker.pid
        status, missing = call(server, "GET", f"{base}/workers/no-such-worker")
        assert status == 404 and missing["error"]["field"] == "name"
        assert "no live worker named 'no-such-worker'" in missing["error"]["message"]
        assert call(server, "GET", f"{base}/workers", token="consumer")[0] == 403
        assert call(server, "GET", "/v1/queues/not-served/workers")[0] == 404
        # an HTTP consumer appears once it reserves
        status, _ = call(server, "POST", f"{base}/topics/:reserve/h.topic", token="admin",
                         body={"group": "http-group", "consumer": "http-1"})
        assert status in (200, 204)
        status, reply = call(server, "GET", f"{base}/workers")
        pulled = {w["name"]: w for w in reply["workers"]}["http-1"]
        assert pulled["kind"] == "pull" and pulled["group"] == "http-group"
        assert pulled["topics"] == ["h.topic"] and pulled["pid"] == 0
