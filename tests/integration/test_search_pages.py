"""A search page examines up to its bound (docs/operations.md#search-and-bulk): a listing call
that comes back short (a rare topic among many jobs of others, spread over partitions), or a
state with no job at all, does not end the page; the page goes on to its ``scan`` jobs, or to
the end of the search. Against a real Redis, on both faces (``make_queue``)."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from tests.integration import test_queue_api
from tests.integration.test_queue_api import Face

pytestmark = pytest.mark.timeout(120)
make_queue = test_queue_api.make_queue  # the sync and async faces fixture, shared

OTHERS = 6000  # delayed jobs of another topic, around the rare ones
RARE = 60


def fill_rare(q: Face) -> None:
    """``RARE`` delayed jobs of topic ``rare`` spread among ``OTHERS`` of topic ``bulk``; the
    56th rare job (and the 43rd) has customer 42."""
    specs = [sd.JobSpec("bulk", {"n": i}, id=f"b{i:05d}", delay=3600 + i) for i in range(OTHERS)]
    for start in range(0, OTHERS, 1000):
        q.enqueue_many(specs[start:start + 1000])
    for i in range(RARE):
        q.enqueue("rare", {"n": i, "customer": {"id": 42 if i in (42, 55) else i}},
                  id=f"r{i:02d}", delay=3600 + i * (OTHERS // RARE))


def pages(q: Face, scan: int, **filters: Any) -> list[tuple[int, int, bool]]:
    """Every call of a search to its end: (found, examined, more to search) per call."""
    out: list[tuple[int, int, bool]] = []
    cursor = None
    for _ in range(100):
        page = q.search(scan=scan, cursor=cursor, **filters)
        out.append((len(page.jobs), page.examined, page.cursor is not None))
        cursor = page.cursor
        if cursor is None:
            return out
    raise AssertionError(f"the search never ended: {out[:10]}")


def test_a_rare_topic_is_searched_a_full_page_at_a_time(make_queue: Any) -> None:
    q = make_queue(partitions=4)
    fill_rare(q)
    found = pages(q, 250, topic="rare", body=["customer.id=42"])
    assert found == [(2, RARE, False)], found  # one page: the whole topic, every state
    found = pages(q, 25, topic="rare", body=["customer.id=42"])
    # every page but the last examines its 25 jobs of the topic; none comes back short
    assert [examined for _, examined, _ in found] == [25, 25, 10], found
    assert sum(n for n, _, _ in found) == 2


def test_states_without_jobs_do_not_cost_a_page_each(make_queue: Any) -> None:
    q = make_queue(partitions=2)
    for i in range(30):
        q.enqueue("mail", {"n": i}, id=f"d{i:02d}", delay=600 + i)
    # every state (delayed, ready, reserved, dead, waiting): one page holds the 30 jobs
    assert pages(q, 250, error="nothing like this") == [(0, 30, False)]
    assert pages(q, 250, body=["n=29"]) == [(1, 30, False)]
    # bounded still: 7 a page, the last one short
    assert [e for _, e, _ in pages(q, 7, body=["n"])] == [7, 7, 7, 7, 2]
