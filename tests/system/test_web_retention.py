"""Dead-letter retention seen through ``streamdelay serve`` (docs/reliability.md
#dead-letter-retention): its embedded dispatcher purges as a worker's does and counts each purged
job in ``streamdelay_jobs_total`` with outcome ``purged`` (group ``""``, no consumer settled it);
``GET /v1/queues/{queue}/retention`` reads the settings in force."""

from __future__ import annotations

import time

import pytest

import streamdelay as sd
from tests.integration.test_dead_retention import kill
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(120)


def test_serves_dispatcher_counts_purged_jobs(shared_redis: RedisServer, queue_name: str) -> None:
    with sd.Queue(queue_name, url=shared_redis.url, max_attempts=1, dead_max=1) as q:
        dead = kill(q, 3)
        with WebServer(shared_redis.url, [queue_name]) as server:
            start = time.monotonic()
            while [d.id for d in q.dead_list("t")] != dead[-1:]:
                assert time.monotonic() - start < 60, "serve's dispatcher kept the surplus"
                time.sleep(0.1)
            text = ""
            sample = (f'streamdelay_jobs_total{{group="",outcome="purged",queue="{queue_name}",'
                      f'topic="t"}} 2.0')
            while sample not in text:  # counted right after the call that purged them
                assert time.monotonic() - start < 60, text[-3000:]
                text = server.request("GET", "/metrics", token="reader")[1]
                time.sleep(0.1)
