"""The dashboard's operator items in a real browser (headless Chromium, Playwright) against a
real ``streamdelay serve`` (docs/dashboard.md): the large lateness and throughput charts fed by
a real worker's record, the one labelled clock, "50 of N" totals, the no-group warning, the
reserved job's group and reclaim time, the 420 px layout (every element inside its card),
and search + bulk with its dry run and confirm step."""

from __future__ import annotations

import time
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
        """Open a dashboard path and wait for its load."""
        self.page.goto(self.server.url + path)


@pytest.fixture(scope="module")
def dash(shared_redis: RedisServer) -> Iterator[Page]:
    """A queue with work done by a real worker (ok, retried, dead), jobs on a topic nobody
    serves, and a page logged in as admin."""
    name = f"find{uuid.uuid4().hex[:8]}"
    queue = sd.Queue(name, url=shared_redis.url)
    queue.enqueue_many([sd.JobSpec("work", {"n": i, "tenant": "acme" if i % 2 else "zeta"},
                                   id=f"w{i:02d}", max_attempts=1 if i < 3 else 2)
                        for i in range(12)])
    worker = sd.Worker(queue, block=0.05)

    @worker.handler("work")
    def handle(job: sd.Job) -> None:
        if job.body["n"] < 6 and job.attempt == 1:
            raise RuntimeError(f"gateway timeout for {job.body['tenant']}")

    worker.run(until_idle=True)  # its lateness and outcome counts are flushed at shutdown
    queue.enqueue_many([sd.JobSpec("orphan", i, id=f"o{i}") for i in range(3)])
    queue.enqueue_many([sd.JobSpec("later", {"tenant": "acme" if i % 3 == 0 else "zeta"},
                                   id=f"l{i:03d}", delay=3600 + i) for i in range(60)])
    with WebServer(shared_redis.url, [name]) as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "/login")
        assert "write" in str(page.locator(".hint").text_content())  # the scopes are named
        page.fill("input[name=token]", server.token("admin"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        # the orphan topic's jobs become ready (serve's dispatcher) and nobody reads them
        deadline = time.monotonic() + 20
        while queue.stats().topics["orphan"].ready < 3:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        yield Page(server, queue, page)
        assert errors == [], errors
    queue.close()


def test_charts_throughput_clock_and_the_no_group_warning(dash: Page) -> None:
    dash.goto(f"/q/{dash.queue.name}")
    panel = dash.page.locator('figure[data-panel="work"]')
    lateness = panel.locator("svg.chart.big.lateness")
    flow = panel.locator("svg.chart.big.throughput")
    assert lateness.is_visible() and flow.is_visible()
    box = lateness.bounding_box()
    assert box["width"] >= 300 and box["height"] >= 150  # readable, not 150 x 40
    assert lateness.locator("polyline.p50, circle.p50").count() >= 1
    assert "1 ms" in str(lateness.text_content()) and "now" in str(lateness.text_content())
    # 12 jobs: w00-w02 dead at once, w03-w05 retried then ok, w06-w11 ok
    assert (flow.get_attribute("data-dead"), flow.get_attribute("data-retried"),
            flow.get_attribute("data-ok"), flow.get_attribute("data-started")) == (
        "3", "3", "9", "15")
    assert flow.locator("polyline.flow.ok").count() == 1
    assert "15 started, 15 settled" in str(panel.locator("figcaption").text_content())
    # one clock: every time on the page is UTC, the footer says so, the live stamp too
    assert "UTC" in str(dash.page.locator("[data-clock]").text_content())
    dash.page.wait_for_function(
        "() => /updated \\d\\d:\\d\\d:\\d\\d UTC$/.test(document.getElementById('live')"
        ".textContent)", timeout=WAIT_MS)
    assert "UTC" in str(dash.page.locator("p.stamp").first.text_content())
    warning = dash.page.locator('tr[data-topic="orphan"] [data-warning]')
    assert warning.is_visible() and "no consumer group" in str(warning.get_attribute("title"))
    assert "3 ready jobs and no consumer group" in str(
        dash.page.locator('[data-warning-for="orphan"]').text_content())
    assert dash.page.locator('tr[data-topic="work"] [data-warning]').count() == 0


def test_lists_say_how_many_of_how_many(dash: Page) -> None:
    dash.goto(f"/q/{dash.queue.name}/jobs?state=delayed&topic=later")
    assert dash.page.locator("[data-total]").text_content() == "50 of 60 delayed jobs (topic later)"
    assert dash.page.locator("table.jobs tbody tr").count() == 50


def test_a_reserved_job_shows_its_group_and_when_it_is_reclaimed(dash: Page) -> None:
    dash.queue.enqueue("pulled", {"x": 1}, id="held-1", ttr=90)
    deadline = time.monotonic() + 20
    found: list[Any] = []
    while not found:
        found = dash.queue.reserve("pulled", group="pullers", wait=0.2)
        assert time.monotonic() < deadline
    dash.goto(f"/q/{dash.queue.name}/job?id=held-1")
    assert dash.page.locator('dd[data-field="state"]').text_content() == "reserved"
    assert dash.page.locator('dd[data-field="group"]').text_content() == "pullers"
    reclaim = str(dash.page.locator('dd[data-field="reclaimed"]').text_content())
    assert reclaim.startswith("in ") and "ttr 1 m 30 s" in reclaim
    found[0].ack()


@pytest.mark.parametrize("path", ["/q/{q}", "/q/{q}/jobs?state=dead", "/q/{q}/job?id=w00",
                                  "/q/{q}/find?go=1&state=dead"])
def test_at_420_px_every_element_stays_inside_its_card(dash: Page, path: str) -> None:
    page = dash.page
    page.set_viewport_size({"width": 420, "height": 900})
    try:
        dash.goto(path.format(q=dash.queue.name))
        outside = page.evaluate("""() => {
            const bad = [];
            for (const card of document.querySelectorAll('.card')) {
              const c = card.getBoundingClientRect();
              for (const el of card.querySelectorAll('table, svg, pre, form, dl, p, figure')) {
                // a wide table scrolls inside its .scroll box: that box is what must fit
                const box = el.closest('.scroll') || el;
                const r = box.getBoundingClientRect();
                if (r.width && (r.left < c.left - 1 || r.right > c.right + 1))
                  bad.push(el.tagName + '.' + el.getAttribute('class') + ' ' + r.left + '-'
                           + r.right + ' in ' + c.left + '-' + c.right);
              }
            }
            if (document.documentElement.scrollWidth > window.innerWidth + 1)
              bad.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
            return bad; }""")
        assert outside == [], outside
        # numbers right-aligned under their right-aligned headers
        aligned = page.evaluate("""() => [...document.querySelectorAll('th.n')].every(
            th => getComputedStyle(th).textAlign === 'right')""")
        assert aligned
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_search_then_bulk_dry_run_confirm_and_act(dash: Page) -> None:
    q = dash.queue.name
    dash.goto(f"/q/{q}/find")
    dash.page.select_option("select[name=state]", "delayed")
    dash.page.select_option("select[name=topic]", "later")
    dash.page.fill("input[name=body]", "tenant=acme")
    with dash.page.expect_navigation():
        dash.page.click("form.find button[type=submit]")
    assert dash.page.locator("[data-found]").text_content() == (
        "20 found, 60 examined; search complete")
    dash.page.click("[data-bulk] a.button:has-text('Cancel all')")
    assert dash.page.locator("[data-matched]").text_content() == "20"  # the dry run
    assert dash.queue.stats().topics["later"].delayed == 60  # nothing changed yet
    with dash.page.expect_navigation():
        dash.page.click("form[action$='/bulk'] button[type=submit]")
    assert dash.page.locator("p.flash").text_content() == "20 jobs cancelled"
    assert dash.page.locator("[data-found]").text_content() == (
        "0 found, 40 examined; search complete")
    assert dash.queue.stats().topics["later"].delayed == 40
    # dead jobs by error text: replay them (admin), through the same steps
    dash.goto(f"/q/{q}/find?go=1&state=dead&error=TIMEOUT+for+zeta")
    assert dash.page.locator("[data-found]").text_content().startswith("2 found")  # w00, w02
    dash.page.click("[data-bulk] a.button:has-text('Replay all')")
    with dash.page.expect_navigation():
        dash.page.click("form[action$='/bulk'] button[type=submit]")
    assert dash.page.locator("p.flash").text_content() == "2 jobs replayed"
