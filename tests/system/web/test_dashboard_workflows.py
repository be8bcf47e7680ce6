"""The dashboard's workflow views in a real browser (headless Chromium, Playwright) against a
real ``streamdelay serve`` (docs/dashboard.md#workflows): a job's parents and children with
their states, a batch's page with its progress and callbacks, refreshed live while a worker
runs the members; the search box finds a batch by its id; the waiting list."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import streamdelay as sd
from tests.support.browser import chromium
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(120)
WAIT_MS = 20_000


class Page:
    """The served queue, the server and a logged-in browser page."""

    def __init__(self, server: WebServer, queue: sd.Queue, page: Any) -> None:
        self.server, self.queue, self.page = server, queue, page

    def goto(self, path: str) -> None:
        """Open a dashboard path."""
        self.page.goto(self.server.url + path)

    def text(self, selector: str) -> str:
        """The text of the first element ``selector`` matches."""
        return str(self.page.locator(selector).first.text_content()).strip()


@pytest.fixture(scope="module")
def dash(shared_redis: RedisServer) -> Iterator[Page]:
    """A batch of three members with both callbacks, a child waiting for one member and the
    batch's own parent; a page logged in as admin."""
    name = f"flow{uuid.uuid4().hex[:8]}"
    queue = sd.Queue(name, url=shared_redis.url, max_attempts=1)
    queue.enqueue("gate", id="gate", delay=3600)
    queue.batch([sd.JobSpec("page", {"p": p}, id=f"m{p}", delay=3600) for p in range(3)],
                id="pages", on_success=sd.JobSpec("notify", {"ok": True}),
                on_complete=sd.JobSpec("notify", {"done": True}))
    queue.enqueue("merge", id="merge", after=["m0", "gate"])
    with WebServer(shared_redis.url, [name]) as server, \
            chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "/login")
        page.fill("input[name=token]", server.token("admin"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        yield Page(server, queue, page)
        assert errors == [], errors
    queue.close()


def _relations(dash: Page) -> dict[str, str]:
    rows = dash.page.locator("table.relations tbody tr")
    return {str(rows.nth(i).locator("td").nth(1).text_content()):
            str(rows.nth(i).locator("td[data-state]").text_content())
            for i in range(rows.count())}


def test_a_jobs_parents_and_children_and_a_batchs_progress(dash: Page) -> None:
    dash.goto("/q/" + dash.queue.name + "/job?id=m0")
    assert _relations(dash) == {"merge": "waiting",
                                "pages": "0 of 3 ended (0 succeeded, 0 dead), running"}
    dash.goto("/q/" + dash.queue.name + "/job?id=merge")
    assert _relations(dash) == {"gate": "pending", "m0": "pending"}
    with dash.page.expect_navigation():  # the batch's link
        dash.page.click("a[href*='/job?id=m0']")
    with dash.page.expect_navigation():
        dash.page.click("a[href*='/batch?id=pages']")
    assert dash.text("[data-progress]") == "0 of 3 ended (0 succeeded, 0 dead), running"
    assert dash.text("tr[data-callback=on_success] td[data-state]").startswith("enqueued once")
    # the members run (one fails: dead); the open page follows without a reload
    for member in ("m0", "m1", "m2"):
        dash.queue.reschedule(member, delay=0)
    ended = 0
    while ended < 3:  # a pull consumer (serve's dispatcher makes them ready)
        for r in dash.queue.reserve("page", count=3, wait=5):
            if r.id == "m2":
                r.fail("page 2 is gone", dead=True)
            else:
                r.ack()
            ended += 1
    dash.page.wait_for_function(
        "() => document.querySelector('[data-progress]').textContent.startsWith('3 of 3')",
        timeout=WAIT_MS)
    assert dash.text("[data-progress]") == "3 of 3 ended (2 succeeded, 1 dead), done"
    assert dash.text("dd[data-field=dead]") == "1"
    assert dash.text("tr[data-callback=on_success] td[data-state]") == (
        "not enqueued: 1 member(s) did not succeed")
    assert dash.text("tr[data-callback=on_complete] td[data-state]") in ("delayed", "ready")
    dash.goto("/q/" + dash.queue.name + "/job?id=merge")
    assert _relations(dash) == {"gate": "pending", "m0": "succeeded"}


def test_search_finds_a_batch_and_the_waiting_list(dash: Page) -> None:
    dash.goto("/q/" + dash.queue.name)
    dash.page.fill("form.search input[name=id]", "pages")
    with dash.page.expect_navigation():
        dash.page.click("form.search button")
    assert "/batch?id=pages" in dash.page.url
    dash.goto("/q/" + dash.queue.name + "/batch?id=nope")
    assert dash.page.locator("[data-missing]").count() == 1
    dash.goto("/q/" + dash.queue.name + "/jobs?state=waiting")
    ids = dash.page.locator("table tbody tr td:first-child a").all_text_contents()
    assert ids == ["merge"]
    assert "after its parents" in dash.page.locator("table tbody tr").first.inner_text()
