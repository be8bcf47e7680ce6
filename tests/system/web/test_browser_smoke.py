"""The browser works here, and the dashboard's script refreshes a page without a reload: a
rendered page and its static files served by a plain HTTP server, opened in headless Chromium."""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from streamdelay.base.models import QueueStats, TopicStats
from streamdelay.web.dashboard import view_models as views
from streamdelay.web.dashboard.render import environment, render
from tests.support.browser import chromium

STATIC = Path(__file__).resolve().parents[3] / "streamdelay" / "web" / "static"


def _topics(delayed: int) -> str:
    stats = QueueStats("q", 0, {"mail": TopicStats("mail", delayed, 0, 0, 0, 0, "workers")})
    rows = views.topic_rows(stats, None)
    return environment().get_template("_topics.html").render(
        queue="q", rows=rows, total=views.totals(rows), now="t", minutes=15, can=())


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    shutil.copytree(STATIC, tmp_path / "static")
    (tmp_path / "q" / "q" / "fragment").mkdir(parents=True)
    (tmp_path / "q" / "q" / "fragment" / "topics").write_text(_topics(3))
    (tmp_path / "q" / "q" / "fragment" / "events").write_text(  # the queue page's events panel
        environment().get_template("_events.html").render(queue="q"))
    rows = views.topic_rows(QueueStats("q", 0, {"mail": TopicStats("mail", 3, 0, 0, 0, 0,
                                                                    "workers")}), None)
    (tmp_path / "index.html").write_text(render("queue.html", queues=["q"], queue="q",
                                                rows=rows, total=views.totals(rows), now="t"))
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()
        server.server_close()


def test_chromium_renders_the_page_and_the_script_refreshes_it(site: tuple[str, Path]) -> None:
    url, root = site
    with chromium() as browser:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/index.html")
        cell = page.locator('tr[data-topic="mail"] td[data-count="delayed"]')
        assert cell.text_content() == "3"
        assert page.locator("svg.chart").count() == 1
        assert page.eval_on_selector("body", "b => getComputedStyle(b).margin") == "0px"  # CSS
        (root / "q" / "q" / "fragment" / "topics").write_text(_topics(7))
        page.wait_for_function(
            """() => document.querySelector('tr[data-topic="mail"] td[data-count="delayed"]')
                      .textContent === '7'""", timeout=15_000)
        assert page.locator("#live").text_content().startswith("live · updated")
        assert errors == []
