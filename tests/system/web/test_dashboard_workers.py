"""The dashboard's Workers page against a real ``streamdelay serve`` and real worker processes
(docs/dashboard.md#workers): each live worker with what it runs now and for how long, a
worker's page, the link from a running job's page to its worker, the nav link, and a page that
says so (404) for a name no live worker has."""

from __future__ import annotations

import html
from urllib.parse import quote

import pytest

import streamdelay as sd
from tests.support.web_server import WebServer
from tests.system.test_fleet_workers import fleet_worker, listed
from tests.system.test_metrics_prometheus import running, wait_for
from tests.system.web.test_dashboard_forms import Session

pytestmark = pytest.mark.timeout(180)


def test_workers_page_shows_what_each_worker_runs_and_links_both_ways(
        redis_url: str, queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), WebServer(redis_url, [queue_name]) as server, \
            sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: len(listed(q)) == 1)
        q.enqueue("f.slow", {"ms": 60_000}, id="order-close-42")
        wait_for("its job shown", lambda: listed(q)[0].running == ("order-close-42",))
        name = listed(q)[0].name
        session = Session(server, "reader")
        status, _, page = session.get(f"/q/{queue_name}/workers")
        assert status == 200
        assert f'data-worker="{name}"' in page and "fleet-app" in page and "f.slow" in page
        assert 'data-running="order-close-42"' in page and "1 of 2" in page
        assert f'href="/q/{queue_name}/job?id=order-close-42"' in page
        assert 'data-nav="workers"' in page
        worker_href = f"/q/{queue_name}/worker?name={quote(name)}"
        assert html.escape(worker_href) in page
        status, _, detail = session.get(worker_href)
        assert status == 200 and f"pid</dt><dd data-field=\"pid\">{worker.pid}<" in detail
        assert 'data-running="order-close-42"' in detail
        # the running job's page links to its worker
        status, _, job = session.get(f"/q/{queue_name}/job?id=order-close-42")
        assert status == 200 and "data-worker-link" in job
        assert html.escape(f"/q/{queue_name}/worker?name={quote(name, safe='')}") in job
        status, _, missing = session.get(f"/q/{queue_name}/worker?name=no-such-worker")
        assert status == 404 and "No live worker named &#39;no-such-worker&#39;" in missing
        status, _, _ = Session(server, None).get(f"/q/{queue_name}/workers")
        assert status in (302, 303)  # no session: to the login page
