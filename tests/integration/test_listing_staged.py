"""The ready listing (``Queue.jobs(state="ready")``, the search built on it, the CLI's and the
HTTP routes' listing) includes the jobs waiting in the lanes of staged topics (record state
``r``, docs/priorities.md): after the streams' ready jobs, page by page, each job once, bounded
by the page's limit. Real redis-server, 1 and 3 partitions."""

from __future__ import annotations

import time

import pytest

import streamdelay as sd
from tests.integration.test_pull import running_dispatcher

pytestmark = pytest.mark.timeout(60)


def _ready(q: sd.Queue, topic: str | None, limit: int) -> tuple[list[sd.JobInfo], int]:
    """Every ready job, ``limit`` a page; and the number of pages."""
    found: list[sd.JobInfo] = []
    cursor, pages = None, 0
    while True:
        page = q.jobs(state="ready", topic=topic, limit=limit, cursor=cursor)
        assert len(page.jobs) <= limit
        found.extend(page.jobs)
        pages += 1
        cursor = page.cursor
        if cursor is None:
            return found, pages
        assert pages < 200


def _wait_ready(q: sd.Queue, topic: str, n: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        row = q.stats().topics.get(topic)
        if row is not None and row.ready == n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{topic}: {n} ready jobs expected")


@pytest.mark.parametrize("partitions", [1, 3])
def test_ready_listing_pages_through_the_lanes_each_job_once(
        redis_url: str, queue_name: str, partitions: int) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        plain = [r.id for r in q.enqueue_many(
            [sd.JobSpec("plain", {"n": i}, id=f"p{i}") for i in range(7)])]
        keys = [f"tenant-{i}" for i in range(5)]
        staged = [r.id for r in q.enqueue_many(
            [sd.JobSpec("staged", {"n": i, "k": keys[i % 5]}, id=f"s{i}", key=keys[i % 5],
                        priority=i % 10) for i in range(23)]
            + [sd.JobSpec("staged", {"n": 100 + i}, id=f"u{i}", priority=7)
               for i in range(6)])]  # no key: the lane of its own
        later = q.enqueue("staged", {}, id="later", key="tenant-0", delay=3600).id
        with running_dispatcher(q):
            _wait_ready(q, "plain", len(plain))
            _wait_ready(q, "staged", len(staged))
        for limit in (1, 4, 1000):
            found, pages = _ready(q, None, limit)
            ids = [j.id for j in found]
            assert len(ids) == len(set(ids))  # each job once
            assert sorted(ids) == sorted(plain + staged)  # the lanes' jobs too, not 'later'
            assert sorted(ids[:len(plain)]) == sorted(plain)  # the streams' ready jobs first
            assert all(j.state == "ready" for j in found)
            if limit == 1000:
                assert pages == 1
        only, _ = _ready(q, "staged", 5)
        assert sorted(j.id for j in only) == sorted(staged)
        first = next(j for j in only if j.id == "{tenant-1}s1")
        assert (first.topic, first.key, first.priority, first.body) == (
            "staged", "tenant-1", 1, {"n": 1, "k": "tenant-1"})
        assert [j.id for j in q.jobs(state="delayed").jobs] == [later]
        # the search walks the same listing
        hits = q.search(topic="staged", state="ready", body=("k=tenant-3",))
        assert sorted(j.id for j in hits.jobs) == sorted(
            f"{{tenant-3}}s{i}" for i in range(23) if i % 5 == 3)
        # a job taken from its lane is no longer listed in it (it is reserved now)
        got = q.reserve("staged", group="g", count=1)
        assert len(got) == 1
        left = [j.id for j in _ready(q, "staged", 3)[0]]
        assert got[0].id not in left and len(left) == len(staged) - 1


def test_a_bad_lanes_cursor_names_the_field(queue: sd.Queue) -> None:
    for bad in ("l:x", "l:0:12:nopipe", "l:9:1:t|k|a", "l:0:1:t|k|a b"):
        with pytest.raises(sd.ValidationError) as err:
            queue.jobs(state="ready", cursor=bad)
        assert err.value.field == "cursor"
