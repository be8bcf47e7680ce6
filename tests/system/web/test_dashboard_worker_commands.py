"""The Quiet and Stop buttons of a worker's page, with their confirm step, against a real
``streamdelay serve`` and a real worker process (docs/dashboard.md#workers): offered to the
admin scope only, nothing changes on the GET of the confirm page, the POST quiets then stops
the worker (it exits 0), and an unknown name is a page that says so (404)."""

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


def test_quiet_then_stop_a_worker_through_the_confirm_step(redis_url: str,
                                                           queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), WebServer(redis_url, [queue_name]) as server, \
            sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: len(listed(q)) == 1)
        name = listed(q)[0].name
        page_path = f"/q/{queue_name}/worker?name={quote(name)}"
        quiet_href = f"/q/{queue_name}/confirm?action=quiet&name={quote(name)}"
        stop_href = f"/q/{queue_name}/confirm?action=stop&name={quote(name)}"
        reader, writer = Session(server, "reader"), Session(server, "writer")
        assert "confirm?action=quiet" not in reader.get(page_path)[2]
        assert "confirm?action=stop" not in writer.get(page_path)[2]
        assert writer.get(quiet_href)[0] == 403
        admin = Session(server, "admin")
        status, _, page = admin.get(page_path)
        assert status == 200
        assert html.escape(quiet_href) in page and html.escape(stop_href) in page

        status, _, confirm = admin.get(quiet_href)
        assert status == 200 and "takes no new jobs" in confirm and name in confirm
        assert [w.state for w in q.workers()] == ["running"]  # a GET changes nothing
        status, headers, _ = admin.post(f"/q/{queue_name}/act", {
            "action": "quiet", "name": name, "back": page_path})
        assert status == 303 and headers["location"].startswith(page_path + "&done=")
        wait_for("state quiet", lambda: [w.state for w in q.workers()] == ["quiet"])
        status, _, page = admin.get(page_path)
        assert 'data-field="state">quiet<' in page
        assert "confirm?action=quiet" not in page and html.escape(stop_href) in page

        status, _, confirm = admin.get(stop_href)
        assert status == 200 and "graceful" in confirm
        status, _, _ = admin.post(f"/q/{queue_name}/act", {"action": "stop", "name": name,
                                                             "back": page_path})
        assert status == 303 and worker.wait(30) == 0

        status, _, missing = admin.post(f"/q/{queue_name}/act", {
            "action": "stop", "name": "no-such-worker"})
        assert status == 404 and "no-such-worker" in missing
        status, _, _ = admin.get(f"/q/{queue_name}/confirm?action=quiet")
        assert status == 400  # no worker named
