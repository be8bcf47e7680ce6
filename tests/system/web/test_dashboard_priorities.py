"""A staged topic's lateness per priority on the dashboard (docs/dashboard.md#lateness,
docs/priorities.md#where-it-shows): a real Worker runs staged jobs of two priorities, its
lateness record counts them per priority, and the topic table of a real ``streamdelay serve``
shows one row per priority under the staged topic, none under a plain one."""

from __future__ import annotations

import re
import uuid

import pytest

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.telemetry.lateness import LatenessWindow, lateness_plan
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer
from tests.system.web.test_dashboard_forms import Session

pytestmark = pytest.mark.timeout(90)


def test_a_staged_topic_shows_its_lateness_per_priority(shared_redis: RedisServer) -> None:
    name = f"prio{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=shared_redis.url) as q:
        # priorities other than 5 make "report" staged; "mail" stays a plain topic
        q.enqueue_many([sd.JobSpec("report", i, id=f"r{i}", priority=9 if i % 3 else 2)
                        for i in range(6)])
        q.enqueue_many([sd.JobSpec("mail", i, id=f"m{i}") for i in range(3)])
        assert q.stats().topics["report"].staged and not q.stats().topics["mail"].staged
        worker = sd.Worker(q, block=0.05)
        ran: list[str] = []

        @worker.handler("report")
        @worker.handler("mail")
        def handle(job: sd.Job) -> None:
            ran.append(job.id)

        worker.run(until_idle=True)  # its lateness record is flushed at shutdown
        assert len(ran) == 9

        window: LatenessWindow = drive_sync(q.client, lateness_plan(name, 15), 5.0)
        assert sum(window.merged("report")) == 6 and sum(window.merged("mail")) == 3
        assert {p: sum(window.merged("report", priority=p))
                for p in window.priorities["report"]} == {"9": 4, "2": 2}
        assert "mail" not in window.priorities  # a plain topic: nothing more written

        with WebServer(shared_redis.url, [name]) as server:
            status, _, page = Session(server, "reader").get(f"/q/{name}/fragment/topics")
        assert status == 200, page
        assert re.findall(r'data-priority-of="([\w.]+)" data-priority="(\d)"', page) == [
            ("report", "9"), ("report", "2")]
        assert page.count('data-topic="') == 2  # the priority rows are not topics
