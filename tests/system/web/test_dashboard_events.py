"""The queue page's live events panel in headless Chromium against a real ``streamdelay
serve`` (docs/dashboard.md#live-events): a queue without events says how to turn them on; with
events, new transitions appear without a reload, newest first, each linking to its job."""

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
WAIT_MS = 20_000  # the panel refreshes every 2 s; generous for a shared machine


@pytest.fixture(scope="module")
def page_of(shared_redis: RedisServer) -> Iterator[tuple[WebServer, Any, list[str]]]:
    """A service of two queues (the first with events, 2 partitions; the second without) and a
    logged-in browser page."""
    names = [f"dev{uuid.uuid4().hex[:8]}", f"dno{uuid.uuid4().hex[:8]}"]
    with sd.Queue(names[0], url=shared_redis.url, partitions=2, events=True) as q:
        q.enqueue("t", 0, id="seed", delay=3600)
    with sd.Queue(names[1], url=shared_redis.url, partitions=2) as q:
        q.enqueue("t", 0, id="seed", delay=3600)
    with WebServer(shared_redis.url, names, env={"STREAMDELAY_PARTITIONS": "2"}) as server, \
            chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.url + "/login")
        page.fill("input[name=token]", server.token("reader"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        yield server, page, names
        assert errors == [], errors


def test_the_panel_shows_new_events_live(page_of: tuple[WebServer, Any, list[str]]) -> None:
    server, page, names = page_of
    page.goto(f"{server.url}/q/{names[0]}")
    assert page.locator('#events tr[data-job="seed"][data-event="enqueued"]').count() == 1
    page.evaluate("window.__same_page = true")
    with sd.Queue(names[0], url=server.redis_url, partitions=2) as q:
        q.enqueue("t", 1, id="live-1", delay=3600)
        q.enqueue("t", 2, id="live-2", delay=3600)
        assert q.cancel("live-1")
    page.wait_for_selector('#events tr[data-job="live-1"][data-event="cancelled"]',
                           timeout=WAIT_MS)
    rows = page.eval_on_selector_all(
        "#events tbody tr", "rows => rows.map(r => [r.dataset.job, r.dataset.event])")
    newest = [tuple(r) for r in rows[:3]]  # newest first (one ms: partition order)
    assert sorted(newest) == [("live-1", "cancelled"), ("live-1", "enqueued"),
                              ("live-2", "enqueued")]
    assert newest.index(("live-1", "cancelled")) < newest.index(("live-1", "enqueued"))
    link = page.locator('#events tr[data-job="live-2"] a').first
    assert link.get_attribute("href") == f"/q/{names[0]}/job?id=live-2"
    assert page.evaluate("window.__same_page") is True  # no reload happened


def test_a_queue_without_events_says_how_to_turn_them_on(
        page_of: tuple[WebServer, Any, list[str]]) -> None:
    server, page, names = page_of
    page.goto(f"{server.url}/q/{names[1]}")
    off = page.locator("#events [data-events-off]")
    assert off.count() == 1 and "events=True" in str(off.text_content())
