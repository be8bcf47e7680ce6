"""The queue page's totals (docs/dashboard.md#totals) on a real server: a real worker ran jobs
(some failed) and is still serving; the page shows processed and failed today and in total, the
workers count, Redis's version and memory, and the throughput chart of each window."""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid

import pytest
import redis

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(120)


def _field(html: str, row: str, name: str) -> int:
    found = re.search(rf'data-totals="{row}">.*?data-{name}>(\d+)<', html, re.S)
    assert found, html[:3000]
    return int(found.group(1))


def test_the_queue_page_shows_what_ran_the_workers_and_redis(shared_redis: RedisServer) -> None:
    name = f"tot{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url) as q:
        q.enqueue_many([sd.JobSpec("good", i) for i in range(8)]
                       + [sd.JobSpec("bad", i, max_attempts=1) for i in range(3)])
        worker = sd.Worker(q, concurrency=4)
        worker.handler("good")(lambda job: None)

        @worker.handler("bad")
        def bad(job: sd.Job) -> None:
            raise RuntimeError("refused")

        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_until_complete, args=(worker.serve(),))
        thread.start()
        try:
            with WebServer(shared_redis.url, [name]) as server:
                deadline = time.monotonic() + 60  # ran, and flushed within 5 s
                while True:
                    status, html = server.request("GET", f"/q/{name}?window=7d",
                                                  headers={"Accept": "text/html"})
                    assert status == 200
                    if _field(html, "total", "processed") == 11:
                        break
                    assert time.monotonic() < deadline, html
                    time.sleep(0.5)
                assert _field(html, "total", "failed") == 3
                assert _field(html, "today", "processed") in (0, 11)  # 0: across midnight
                assert re.search(r"data-workers>1<", html), "one worker serving"
                version = redis.Redis.from_url(shared_redis.url).info("server")["redis_version"]
                assert f"data-redis-version>{version}<" in html
                assert re.search(r"data-redis-memory>[\d.]+[KMGB]", html)
                # the chart of the chosen window: its counts and its hourly axis
                assert 'data-history-window="7d"' in html
                assert re.search(r'class="chart big throughput"[^>]*data-ok="8" '
                                 r'data-retried="0" data-dead="3"', html), html
                assert "/h</text>" in html and "-7 d</text>" in html
                for window, unit in (("15m", "/min"), ("1h", "/min"), ("24h", "/5 min")):
                    status, html = server.request("GET", f"/q/{name}?window={window}",
                                                  headers={"Accept": "text/html"})
                    assert f'data-history-window="{window}"' in html
                    assert f"{unit}</text>" in html
                    assert 'data-ok="8" data-retried="0" data-dead="3"' in html, window
                # the live refresh's fragment: the same card
                status, html = server.request("GET", f"/q/{name}/fragment/totals?window=1h",
                                              headers={"Accept": "text/html"})
                assert status == 200
                assert _field(html, "total", "processed") == 11
                assert 'data-history-window="1h"' in html
        finally:
            loop.call_soon_threadsafe(worker.stop)
            thread.join(30)
