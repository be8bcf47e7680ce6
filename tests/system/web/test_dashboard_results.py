"""How jobs ended, on the dashboard (docs/dashboard.md#pages), against a real ``streamdelay
serve`` and a real redis-server: a succeeded job whose result is kept (its record gone) and a
``keep_done`` tombstone show their state, result, finish time and event timeline; a batch
page lists its members with their states and says when its ``on_success`` can no longer
fire; the topic table has a waiting column; search pages examine up to their bound and say
how much is left. Over plain HTTP, and one job page followed live in headless Chromium."""

from __future__ import annotations

import html
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import streamdelay as sd
from tests.support.browser import chromium
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer
from tests.system.web.test_dashboard_forms import Session

pytestmark = pytest.mark.timeout(180)
WAIT_MS = 20_000
RARE, OTHERS = 300, 6000  # the search's jobs of topic rare among others, 4 partitions


class Served:
    """The served queue (events on, results kept), the server and an admin session."""

    def __init__(self, server: WebServer, queue: sd.Queue, session: Session) -> None:
        self.server, self.queue, self.session = server, queue, session
        self.name = queue.name

    def page(self, path: str) -> tuple[int, str]:
        """GET a dashboard path: (status, body)."""
        status, _, body = self.session.get(path)
        return status, body


def take(queue: sd.Queue, topic: str, job_id: str) -> sd.Reservation:
    """Reserve ``job_id`` (the only ready job of ``topic``)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for found in queue.reserve(topic, wait=2):
            assert found.id == job_id, found.id
            return found
    raise AssertionError(f"{job_id} never became ready")


@pytest.fixture(scope="module")
def served(shared_redis: RedisServer) -> Iterator[Served]:
    """ok1 succeeded (result kept, record gone); tomb1 and tomb2 succeeded as ``keep_done``
    tombstones (tomb1's result kept, tomb2's not); a batch of three, one member dead, one
    succeeded, one still delayed, with a job waiting for it; a rare topic among others."""
    name = f"res{uuid.uuid4().hex[:8]}"
    queue = sd.Queue(name, url=shared_redis.url, events=True, keep_result=3600, partitions=4)
    tombs = sd.Queue(name, url=shared_redis.url, keep_done=3600, partitions=4)
    queue.enqueue("rep", {"month": 1}, id="ok1")  # made ready by serve's dispatcher
    server = WebServer(shared_redis.url, [name], "--partitions", "4").start()
    try:
        fill(queue, tombs)
    except BaseException:
        server.stop()
        raise
    try:
        yield Served(server, queue, Session(server, "admin"))
    finally:
        server.stop()
    tombs.close()
    queue.close()


def fill(queue: sd.Queue, tombs: sd.Queue) -> None:
    """The fixture's jobs (see ``served``)."""
    queue.enqueue("tomb", {"n": 1}, id="tomb1")
    running = take(queue, "rep", "ok1")
    running.touch(progress={"done": 3, "of": 3})  # kept two ttrs: the page shows it after
    running.ack({"rows": 42})
    take(tombs, "tomb", "tomb1").ack({"rows": 7})
    queue.enqueue("tomb", {"n": 2}, id="tomb2", keep_result=0)
    take(tombs, "tomb", "tomb2").ack({"rows": 0})
    queue.batch([sd.JobSpec("page", {"p": 0}, id="m0"), sd.JobSpec("page", {"p": 1}, id="m1",
                                                                    delay=3600)],
                id="pages", on_success=sd.JobSpec("notify", {"ok": True}),
                on_complete=sd.JobSpec("notify", {"done": True}), close=False)
    queue.batch([sd.JobSpec("page", {"p": 2}, id="m2")], id="pages")
    queue.enqueue("merge", id="merge", after=["m1"])
    queue.batch([sd.JobSpec("big", {"n": i}, id=f"big-{i:03d}", delay=3600) for i in range(150)],
                id="big")
    queue.cancel("big-140")  # a member that did not succeed, listed first
    ended, deadline = 0, time.monotonic() + 20
    while ended < 2:  # m0 and m2 (m1 is delayed an hour)
        assert time.monotonic() < deadline, "the batch's members never became ready"
        for member in queue.reserve("page", wait=2, count=2):
            if member.id == "m2":
                member.fail("page 2 is gone", dead=True)
            else:
                member.ack()
            ended += 1
    specs = [sd.JobSpec("bulk", {"n": i}, id=f"b{i:05d}", delay=3600 + i) for i in range(OTHERS)]
    specs += [sd.JobSpec("rare", {"n": i, "customer": {"id": 42 if i == RARE - 1 else 1000 + i}},
                         id=f"r{i:03d}", delay=3600 + i * (OTHERS // RARE))
              for i in range(RARE)]
    for start in range(0, len(specs), 1000):
        queue.enqueue_many(specs[start:start + 1000])


def field(body: str, label: str) -> str:
    """The text of the record's ``<dd data-field=label>``."""
    found = re.search(rf'<dd data-field="{label}">(.*?)</dd>', body, re.S)
    assert found, f"no field {label!r} in the page"
    return html.unescape(found.group(1)).strip()


def timeline(body: str) -> list[str]:
    """The kinds of the job's event timeline, in order."""
    return re.findall(r'<tr data-event="([a-z]+)"', body)


def test_a_succeeded_job_with_a_kept_result_has_a_page(served: Served) -> None:
    status, body = served.page(f"/q/{served.name}/job?id=ok1")
    assert status == 200, body[-800:]
    assert field(body, "state") == "succeeded"
    assert field(body, "finished").endswith(" ago)")
    assert re.search(r'<pre class="result"[^>]*>\{\s*&#34;rows&#34;: 42\s*\}</pre>', body) or \
        '"rows": 42' in html.unescape(body)
    assert timeline(body) == ["enqueued", "promoted", "started", "succeeded"]
    assert field(body, "progress").startswith('{"done":3,"of":3}')
    # the live refresh keeps it (not "gone")
    status, fragment = served.page(f"/q/{served.name}/fragment/job?id=ok1")
    assert status == 200 and field(fragment, "state") == "succeeded"
    assert "data-missing" not in fragment


def test_a_tombstone_shows_its_result_finish_time_and_events(served: Served) -> None:
    status, body = served.page(f"/q/{served.name}/job?id=tomb1")
    assert status == 200
    assert field(body, "state") == "done"
    assert field(body, "outcome") == "succeeded"
    assert field(body, "finished").endswith(" ago)")
    assert '"rows": 7' in html.unescape(body)
    assert timeline(body) == ["enqueued", "promoted", "started", "succeeded"]
    status, body = served.page(f"/q/{served.name}/job?id=tomb2")  # its result not kept
    assert status == 200 and field(body, "state") == "done"
    assert field(body, "finished").endswith(" ago)")  # from its succeeded event
    assert "not kept" in field(body, "result")
    assert timeline(body) == ["enqueued", "promoted", "started", "succeeded"]
    status, body = served.page(f"/q/{served.name}/job?id=never")
    assert status == 404 and "data-missing" in body


def test_the_batch_page_lists_its_members_and_an_on_success_that_cannot_fire(
        served: Served) -> None:
    status, body = served.page(f"/q/{served.name}/batch?id=pages")
    assert status == 200
    members = dict(re.findall(
        r'<tr data-member="([^"]+)">.*?<td data-state>(.*?)</td>', body, re.S))
    assert members == {"m2": "dead", "m0": "succeeded", "m1": "pending (delayed)"}, members
    assert next(iter(members)) == "m2"  # who died comes first
    success = re.search(r'<tr data-callback="on_success">.*?<td data-state>(.*?)</td>', body,
                        re.S)
    assert success and html.unescape(success.group(1)).startswith("will not be enqueued"), \
        success and success.group(1)
    assert "m2" in html.unescape(success.group(1))


def test_the_topic_table_has_a_waiting_column(served: Served) -> None:
    status, body = served.page(f"/q/{served.name}/fragment/topics")
    assert status == 200
    row = re.search(r'<tr data-topic="merge">(.*?)</tr>', body, re.S)
    assert row, body[:500]
    assert re.search(r'data-count="waiting"><a [^>]*>1</a>', row.group(1)), row.group(1)
    assert re.search(r"<th class=\"n\"[^>]*>waiting</th>", body)


def test_search_pages_examine_up_to_their_bound_and_say_what_is_left(served: Served) -> None:
    path = f"/q/{served.name}/find?go=1&topic=rare&body=customer.id%3D42"
    status, body = served.page(path)
    assert status == 200
    found = re.search(r"<p class=\"count\" data-found>(.*?)</p>", body, re.S)
    assert found and html.unescape(found.group(1)) == (
        f"0 found, 250 examined; about {RARE - 250} left to search"), found and found.group(1)
    more = re.search(r'<a class="button" rel="next" href="([^"]+)"', body)
    assert more
    status, body = served.page(html.unescape(more.group(1)))
    found = re.search(r"<p class=\"count\" data-found>(.*?)</p>", body, re.S)
    assert found and html.unescape(found.group(1)) == (
        f"1 found, {RARE - 250} examined; search complete"), found and found.group(1)
    assert f"r{RARE - 1:03d}" in body


def test_a_job_page_follows_its_job_to_its_result_live(served: Served) -> None:
    served.queue.enqueue("live", {"n": 1}, id="live1")
    running = take(served.queue, "live", "live1")
    with chromium() as browser:
        page: Any = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(served.server.url + "/login")
        page.fill("input[name=token]", served.server.token("reader"))
        with page.expect_navigation():
            page.click("form[action='/login'] button")
        page.goto(f"{served.server.url}/q/{served.name}/job?id=live1")
        assert page.locator("dd[data-field=state]").text_content() == "reserved"
        running.ack({"pages": 3})  # its record goes (no keep_done): the result stays
        page.wait_for_function(
            "() => (document.querySelector('dd[data-field=state]') || {}).textContent"
            " === 'succeeded'", timeout=WAIT_MS)
        assert '"pages": 3' in str(page.locator("pre.result").text_content())
        kinds = page.locator("tr[data-event]").evaluate_all(
            "rows => rows.map(r => r.dataset.event)")
        assert kinds == ["enqueued", "promoted", "started", "succeeded"]
        assert page.locator("[data-missing]").count() == 0
        assert errors == [], errors


def test_the_search_box_goes_to_a_job_known_by_its_kept_result(served: Served) -> None:
    status, headers, _ = served.session.get(f"/search?queue={served.name}&id=ok1")
    assert status == 303 and headers["location"] == f"/q/{served.name}/job?id=ok1", status
    status, _, _ = served.session.get(f"/search?queue={served.name}&id=never")
    assert status == 404


def test_a_large_batch_lists_its_first_members_those_that_did_not_succeed_first(
        served: Served) -> None:
    # the cancel of big-140 (on another partition than the batch) reaches the batch's record
    # through the outbox, which serve's dispatcher forwards: wait for it, bounded
    deadline = time.monotonic() + 30
    while True:
        status, body = served.page(f"/q/{served.name}/batch?id=big")
        assert status == 200
        members = re.findall(r'<tr data-member="([^"]+)">.*?<td data-state>(.*?)</td>', body,
                             re.S)
        if (members[:1] == [("big-140", "cancelled")] or time.monotonic() > deadline):
            break
        time.sleep(0.2)
    assert len(members) == 100 and members[0] == ("big-140", "cancelled"), members[:3]
    assert members[1:4] == [(f"big-{i:03d}", "pending (delayed)") for i in range(3)]
    assert members[-1] == ("big-098", "pending")  # past the states read
    shown = re.search(r"<p class=\"hint\" data-members-shown>(.*?)</p>", body, re.S)
    assert shown and shown.group(1).startswith("100 of 150 members shown"), shown
