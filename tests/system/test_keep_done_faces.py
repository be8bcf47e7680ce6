"""``keep_done`` per job from the CLI (``enqueue --keep-done``) and the HTTP API (the enqueue
body's ``keep_done``), against a live ``streamdelay serve`` and a real Worker: the job's own
value decides its tombstone; a bad value is refused naming the field
(docs/producer.md#keep_done)."""

from __future__ import annotations

import pytest

import streamdelay as sd
from tests.integration.test_keep_done_per_job import run_all, state
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer
from tests.system.test_fleet_commands import cli

pytestmark = pytest.mark.timeout(120)


def test_cli_and_http_enqueue_take_keep_done(shared_redis: RedisServer, queue_name: str) -> None:
    url = shared_redis.url
    done = cli("enqueue", queue_name, "t", "{}", "--id", "from-cli", "--keep-done", "1h",
               "--url", url)
    assert done.returncode == 0, done
    bad = cli("enqueue", queue_name, "t", "{}", "--keep-done", "-5s", "--url", url)
    assert bad.returncode == 2 and "keep-done" in bad.stderr, bad
    with WebServer(url, [queue_name]) as server:
        path = f"/v1/queues/{queue_name}/jobs"
        status, _ = server.request("POST", path, {"topic": "t", "id": "from-http",
                                                  "keep_done": "1h"})
        assert status in (200, 201)
        status, _ = server.request("POST", path, {"topic": "t", "id": "http-plain"})
        assert status in (200, 201)
        status, problem = server.request("POST", path, {"topic": "t", "keep_done": -1})
        assert status == 400 and "keep_done" in str(problem), problem
    with sd.Queue(queue_name, url=url) as q:
        assert sorted(run_all(q)) == ["from-cli", "from-http", "http-plain"]
        assert [state(q, i) for i in ("from-cli", "from-http", "http-plain")] == [
            "done", "done", None]
