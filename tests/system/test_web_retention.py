"""Dead-letter retention seen through ``streamdelay serve`` (docs/reliability.md
#dead-letter-retention): its embedded dispatcher purges as a worker's does and counts each purged
job in ``streamdelay_jobs_total`` with outcome ``purged`` (group ``""``, no consumer settled it);
``GET /v1/queues/{queue}/retention`` reads the settings in force."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

import streamdelay as sd
from tests.integration.test_dead_retention import kill
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer
from tests.system.test_fleet_commands import cli

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


def test_the_retention_in_force_read_by_api_cli_and_http(shared_redis: RedisServer,
                                                         queue_name: str) -> None:
    """What a queue's process stored is what every face reads, whatever the reader was given;
    a queue without retention says its dead jobs are kept."""
    url, other = shared_redis.url, f"{queue_name}-plain"
    with sd.Queue(queue_name, url=url, dead_ttl=7 * 86400, dead_max=500) as q, \
            sd.Queue(other, url=url) as plain:
        q.enqueue("t", {}, delay=3600)  # the first call stores the settings
        plain.enqueue("t", {}, delay=3600)
        assert q.dead_retention() == sd.DeadRetention(7 * 86400.0, 500)
        assert plain.dead_retention() == sd.DeadRetention(None, None)
        with sd.Queue(queue_name, url=url) as reader:  # not given any: reads what is in force
            assert reader.dead_retention() == q.dead_retention()

        async def read_async() -> sd.DeadRetention:
            async with sd.AsyncQueue(queue_name, url=url) as aq:
                return await aq.dead_retention()

        assert asyncio.run(read_async()) == q.dead_retention()

        shown = cli("dead", "retention", queue_name, "--url", url)
        assert shown.returncode == 0, shown
        assert " ".join(shown.stdout.split()) == (
            "Dead jobs are kept for 7d and at most the newest 500 per topic; older or surplus "
            "ones are purged by the dispatchers.")
        assert max(len(line) for line in shown.stdout.splitlines()) <= 80
        as_json = cli("dead", "retention", queue_name, "--json", "--url", url)
        assert json.loads(as_json.stdout) == {"dead_ttl": 604800.0, "dead_max": 500}
        assert "kept until replayed or purged" in cli("dead", "retention", other,
                                                      "--url", url).stdout
        missing = cli("dead", "retention", "no-such-queue", "--url", url)
        assert missing.returncode == 1 and "no-such-queue" in missing.stderr, missing

        with WebServer(url, [queue_name, other]) as server:
            status, body = server.request("GET", f"/v1/queues/{queue_name}/dead/retention",
                                          token="reader")
            assert status == 200 and body["dead_ttl"] == 604800.0 and body["dead_max"] == 500
            assert "the newest 500 per topic" in body["text"]
            status, body = server.request("GET", f"/v1/queues/{other}/dead/retention",
                                          token="reader")
            assert status == 200 and body["dead_ttl"] is None and body["dead_max"] is None
            status, _ = server.request("GET", f"/v1/queues/{queue_name}/dead/retention",
                                       token=None)
            assert status == 401
            _, document = server.request("GET", "/openapi.json", token="reader")
            assert "deadRetention" in json.dumps(document)
