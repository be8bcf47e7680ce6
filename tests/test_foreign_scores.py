"""A foreign value in the delayed set never breaks a listing (docs/security.md#receipts).

A delayed score is a number to Redis, written as ``1e+17``, ``inf`` or ``1.5`` when it is not
a whole number of ms below 1e17; a record's due time may be far in the future (a client that
parked a job for a thousand years). The library, the HTTP service, the dashboard and the CLI
each list such a queue: every job is listed once, in due order, and nothing answers 500.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.web_server import WebServer

FAR = 10**17  # ms: the year ~3.17 million


@pytest.fixture(scope="module")
def listed(web_server: WebServer) -> Iterator[tuple[sd.Queue, WebServer]]:
    """A served queue holding three delayed jobs, one of them far out (its record too), one
    whose score a foreign client rewrote to 1e17, and foreign members scored inf, -inf, 1.5."""
    queue = sd.Queue(web_server.queues[0], url=web_server.redis_url)
    queue.enqueue("t", {"n": 1}, id="near", delay=100)
    queue.enqueue("t", {"n": 2}, id="moved", delay=200)
    queue.enqueue("t", {"n": 3}, id="far", delay=300)
    keys = PartitionKeys(queue.name, 0)
    foreign = redis.Redis.from_url(web_server.redis_url)
    record = foreign.hget(keys.jobs, "far")
    assert record is not None
    head = record.split(b"|")
    head[2] = str(FAR).encode()  # due ms, as an old failJob wrote it for retry_ms=1e17
    foreign.hset(keys.jobs, "far", b"|".join(head))
    foreign.zadd(keys.delayed, {"far": FAR, "moved": 1e17 + 2**20, "ghost-inf": float("inf"),
                                "ghost-neg": float("-inf"), "ghost-half": 1.5})
    foreign.close()
    yield queue, web_server
    for job in ("near", "moved", "far"):
        queue.cancel(job)
    queue.close()


def test_the_library_lists_every_job_once_in_due_order(listed: tuple[sd.Queue, Any]) -> None:
    queue, _ = listed
    assert [j.id for j in queue.jobs("delayed").jobs] == ["near", "far", "moved"]
    seen: list[str] = []
    cursor = None
    for _ in range(20):  # one job a page: every cursor passes a foreign score
        page = queue.jobs("delayed", limit=1, cursor=cursor)
        seen += [j.id for j in page.jobs]
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == ["near", "far", "moved"]
    far = next(j for j in queue.jobs("delayed").jobs if j.id == "far")
    assert far.due == FAR


def test_http_and_the_dashboard_list_them(listed: tuple[sd.Queue, WebServer]) -> None:
    queue, server = listed
    status, page = server.request("GET", f"/v1/queues/{queue.name}/jobs?state=delayed&limit=1")
    assert status == 200, page
    ids = [j["id"] for j in page["jobs"]]
    while page["cursor"]:
        status, page = server.request(
            "GET", f"/v1/queues/{queue.name}/jobs?state=delayed&limit=1&cursor={page['cursor']}")
        assert status == 200, page
        ids += [j["id"] for j in page["jobs"]]
    assert ids == ["near", "far", "moved"]
    status, html = server.request("GET", f"/q/{queue.name}/jobs?state=delayed",
                                  headers={"Accept": "text/html"})
    assert status == 200, html
    assert all(f">{job}<" in html for job in ("near", "far", "moved")), html
    status, html = server.request("GET", f"/q/{queue.name}/job?id=far",
                                  headers={"Accept": "text/html"})
    assert status == 200 and "far" in html
    status, html = server.request("GET", f"/q/{queue.name}", headers={"Accept": "text/html"})
    assert status == 200


def test_the_cli_lists_them(listed: tuple[sd.Queue, WebServer]) -> None:
    queue, server = listed
    for form in (["--json"], []):
        out = subprocess.run([sys.executable, "-m", "streamdelay", "jobs", queue.name,
                              "--state", "delayed", "--url", server.redis_url, *form],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "internal error" not in out.stderr
        if form:
            assert [j["id"] for j in json.loads(out.stdout)["jobs"]] == ["near", "far", "moved"]
        else:
            assert all(job in out.stdout for job in ("near", "far", "moved"))
    out = subprocess.run([sys.executable, "-m", "streamdelay", "get", queue.name, "far",
                          "--url", server.redis_url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "far" in out.stdout, out.stderr
