"""The dashboard's dead list shows the dead-letter retention in force (docs/dashboard.md), as
stored in Redis by the queue that set it (docs/reliability.md#dead-letter-retention)."""

from __future__ import annotations

import html

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.web_server import WebServer
from tests.system.web.test_dashboard_forms import Session


def test_the_dead_list_shows_the_retention_in_force(web_server: WebServer) -> None:
    name = web_server.queues[0]
    admin = Session(web_server, "admin")
    with sd.Queue(name, url=web_server.redis_url) as plain:
        plain.enqueue("t", {"n": 1}, id="r1", delay=3600)
        try:
            status, _, page = admin.get(f"/q/{name}/jobs?state=dead")
            assert status == 200 and "kept until replayed or purged" in page
            with sd.Queue(name, url=web_server.redis_url, dead_ttl=7200, dead_max=50) as q:
                q.stats()  # its first call stores the retention
                status, _, page = admin.get(f"/q/{name}/jobs?state=dead")
            assert status == 200
            assert ("Dead jobs are kept for 2h and at most the newest 50 per topic"
                    in html.unescape(page)), page
            assert "kept for" not in admin.get(f"/q/{name}/jobs?state=delayed")[2]
        finally:
            plain.cancel("r1")  # and the retention goes: the served queue is shared
            plain.client.hdel(PartitionKeys(name, 0).meta, "dead_ttl", "dead_max")
