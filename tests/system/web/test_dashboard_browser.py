"""The dashboard in a real browser (headless Chromium, Playwright) against a real
``streamdelay serve`` and a real ``streamdelay worker`` process (docs/dashboard.md): log in,
watch the counts change without a reload while the worker runs, cancel a job, replay a dead
one, pause and resume a topic. Every action goes through its confirm step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import streamdelay as sd
from tests.support.browser import chromium
from tests.support.redis_server import RedisServer
from tests.support.web_server import ROOT, WebServer

pytestmark = pytest.mark.timeout(120)
WAIT_MS = 20_000  # the page refreshes every 2 s; generous for a shared machine


class Dash:
    """The served queue, the server, a logged-in page and the worker's marker file."""

    def __init__(self, server: WebServer, queue: sd.Queue, page: Any, fail_flag: Path) -> None:
        self.server, self.queue, self.page, self.fail_flag = server, queue, page, fail_flag

    def goto(self, path: str) -> None:
        """Open a dashboard path."""
        self.page.goto(self.server.url + path)

    def cell(self, topic: str, column: str) -> Any:
        """A count cell of the topic table."""
        return self.page.locator(f'tr[data-topic="{topic}"] td[data-count="{column}"]').first

    def wait_cell(self, topic: str, column: str, text: str) -> None:
        """Wait until the live refresh shows ``text`` in that cell (the page's text in the
        error when it does not)."""
        try:
            self._wait_cell(topic, column, text)
        except Exception as exc:
            row = self.page.locator(f'tr[data-topic="{topic}"]')
            shown = row.first.inner_text() if row.count() else self.page.inner_text("body")
            raise AssertionError(f"{topic} {column} never showed {text!r}: {shown!r} "
                                 f"({self.page.url})") from exc

    def _wait_cell(self, topic: str, column: str, text: str) -> None:
        self.page.wait_for_function(
            "([t, c, v]) => { const e = document.querySelector("
            "`tr[data-topic=\"${t}\"] td[data-count=\"${c}\"]`); "
            "return e !== null && e.textContent.trim() === v; }",
            arg=[topic, column, text], timeout=WAIT_MS)

    def confirm(self) -> None:
        """Press the confirm step's "Yes" button and wait for the page it leads to."""
        assert "/confirm" in self.page.url
        with self.page.expect_navigation():
            self.page.click("form[action$='/act'] button[type=submit]")

    def flash(self) -> str:
        """The message an action left on the page it went back to."""
        return str(self.page.locator("p.flash").text_content())


@pytest.fixture(scope="module")
def worker_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The served queue's name and the flaky topic's marker file."""
    flag = tmp_path_factory.mktemp("dash") / "fail"
    flag.write_text("on")
    return {"DASH_APP_QUEUE": f"dash{uuid.uuid4().hex[:8]}", "DASH_APP_FAIL": str(flag)}


@pytest.fixture(scope="module")
def dash(shared_redis: RedisServer, worker_env: dict[str, str]) -> Iterator[Dash]:
    """``streamdelay serve`` of one fresh queue, and a browser page logged in as admin."""
    name = worker_env["DASH_APP_QUEUE"]
    queue = sd.Queue(name, url=shared_redis.url)
    queue.enqueue("work", id="seed", delay=3600)  # the queue exists before the first page
    with WebServer(shared_redis.url, [name]) as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "/")
        assert "/login" in page.url  # no session: the login page, then back
        page.fill("input[name=token]", "not-a-valid-token-at-all")
        page.click("form[action='/login'] button")
        assert "not valid" in str(page.locator(".error").text_content())
        page.fill("input[name=token]", server.token("admin"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        assert page.url == server.url + "/"
        cookie = next(c for c in page.context.cookies() if c["name"] == "streamdelay_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert server.token("admin") not in cookie["value"]
        yield Dash(server, queue, page, Path(worker_env["DASH_APP_FAIL"]))
        assert errors == [], errors
    queue.close()


@pytest.fixture(scope="module")
def worker(dash: Dash, worker_env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``streamdelay worker`` process of tests.support.apps.dashboard_worker_app."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamdelay", "worker",
         "tests.support.apps.dashboard_worker_app:worker",
         "--url", dash.server.redis_url, "--log-level", "warning"],
        env={**os.environ, **worker_env}, cwd=ROOT)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_counts_and_lateness_change_live_while_a_worker_runs(
        dash: Dash, worker: subprocess.Popen[bytes]) -> None:
    dash.queue.enqueue_many([sd.JobSpec("work", i, id=f"w{i}", delay=6) for i in range(40)])
    dash.goto(f"/q/{dash.queue.name}")
    dash.page.evaluate("window.__same_page = true")
    dash.wait_cell("work", "delayed", "41")  # the 40 and the seed, before they are due
    dash.wait_cell("work", "delayed", "1")  # the worker ran them: only the seed is left
    dash.wait_cell("work", "ready", "0")
    dash.wait_cell("work", "reserved", "0")
    assert dash.page.evaluate("window.__same_page") is True  # no reload happened
    # the worker flushes its lateness counts every 5 s: p50 / p99 and the chart appear
    dash.page.wait_for_function(
        """() => { const row = document.querySelector('tr[data-topic="work"]');
                   return row && row.querySelector('svg.chart polyline, svg.chart circle'); }""",
        timeout=WAIT_MS)
    assert dash.page.evaluate("window.__same_page") is True


def test_search_then_cancel_a_job(dash: Dash) -> None:
    dash.queue.enqueue("work", {"n": 1}, id="cancel-me", delay=3600)
    dash.goto("/")
    dash.page.fill("form.search input[name=id]", "cancel-me")
    with dash.page.expect_navigation():
        dash.page.press("form.search input[name=id]", "Enter")
    assert dash.page.locator('dd[data-field="state"]').text_content() == "delayed"
    dash.page.click("a.button:has-text('Cancel')")
    assert "cancel-me" in str(dash.page.locator(".confirm p").first.text_content())
    assert dash.queue.get("cancel-me") is not None  # the confirm step changed nothing
    dash.confirm()
    assert dash.flash() == "job cancel-me cancelled"
    assert dash.page.locator("[data-missing]").count() == 1
    assert dash.queue.get("cancel-me") is None


def test_replay_a_dead_job(dash: Dash, worker: subprocess.Popen[bytes]) -> None:
    dash.queue.enqueue("flaky", {"n": 1}, id="flaky-1", max_attempts=1)
    deadline = time.monotonic() + 20
    while (info := dash.queue.get("flaky-1")) is None or info.state != "dead":
        assert time.monotonic() < deadline, info
        time.sleep(0.1)
    dash.goto(f"/q/{dash.queue.name}/jobs?state=dead&topic=flaky")
    row = dash.page.locator("table.jobs tbody tr", has_text="flaky-1")
    assert "the flaky service is down" in str(row.text_content())
    with dash.page.expect_navigation():
        row.locator("a").first.click()
    assert "the flaky service is down" in str(dash.page.locator("pre.err").text_content())
    dash.fail_flag.unlink()  # the service is back
    dash.page.click("a.button:has-text('Replay')")
    dash.confirm()
    assert dash.flash() == "1 dead job replayed"
    # the replayed job runs and succeeds: the live fragment says it is gone
    dash.page.wait_for_selector("[data-missing]", timeout=WAIT_MS)
    assert dash.queue.get("flaky-1") is None


def test_pause_then_resume_a_topic(dash: Dash, worker: subprocess.Popen[bytes]) -> None:
    queue = dash.queue.name
    dash.goto(f"/q/{queue}")
    dash.page.click('tr[data-topic="work"] a.button:has-text("Pause")')
    dash.confirm()
    assert dash.flash() == "topic work paused"
    assert dash.page.locator('tr[data-topic="work"] .badge').text_content() == "paused"
    time.sleep(1.0)  # workers see a pause within 1 s
    dash.queue.enqueue_many([sd.JobSpec("work", i, id=f"held{i}") for i in range(3)])
    dash.wait_cell("work", "ready", "3")  # due and promoted, but nobody starts them
    time.sleep(1.5)
    assert dash.queue.stats().topics["work"].ready == 3
    dash.page.click('tr[data-topic="work"] a.button:has-text("Resume")')
    dash.confirm()
    assert dash.flash() == "topic work resumed"
    dash.wait_cell("work", "ready", "0")
    dash.wait_cell("work", "reserved", "0")


def test_limits_and_schedules_are_shown(dash: Dash) -> None:
    """A limited topic shows its rate, concurrency and leases held in the topic table; the
    queue page lists the schedules (name, topic, cron / every, next tick, paused)."""
    q = dash.queue
    q.limit("capped", rate="20/s", concurrency=2)
    q.enqueue("capped", id="cap-1", delay=3600)
    q.schedule("nightly-report", "report", cron="0 3 * * *", tz="Europe/Paris")
    q.schedule("heartbeat", "ping", every=30)
    q.pause_schedule("heartbeat")
    dash.goto(f"/q/{q.name}")
    dash.page.wait_for_function(
        """() => { const c = document.querySelector('tr[data-topic="capped"] td[data-limit]');
                   return c !== null && c.textContent.trim() === '20/s, 0/2 running'; }""",
        timeout=WAIT_MS)
    nightly = dash.page.locator('tr[data-schedule="nightly-report"]')
    assert "report" in nightly.inner_text() and "cron 0 3 * * * (Europe/Paris)" in \
        nightly.inner_text()
    assert "UTC" in str(nightly.locator("td[data-next]").text_content())
    assert "active" in str(nightly.locator("td[data-state]").text_content())
    beat = dash.page.locator('tr[data-schedule="heartbeat"]')
    assert "every 30 s" in beat.inner_text()
    assert "paused" in str(beat.locator("td[data-state]").text_content())
    dash.goto("/")  # the overview's tables show the limit too
    assert dash.page.locator(
        f'[data-live="/q/{q.name}/fragment/topics"] tr[data-topic="capped"] td[data-limit]'
    ).first.text_content() == "20/s, 0/2 running"
