"""Search and bulk steering by filter: ``Queue.search`` / ``Queue.bulk`` on both faces
(``make_queue``), against a real Redis; every answer is checked against what Redis holds
(docs/operations.md#search-and-bulk)."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from streamdelay.base.errors import ValidationError
from tests.integration import test_queue_api
from tests.integration.test_queue_api import Face, run_worker

pytestmark = pytest.mark.timeout(90)
make_queue = test_queue_api.make_queue  # the sync and async faces fixture, shared


def fail_by_kind(job: sd.Job) -> None:
    """Fail with an error text that depends on the body's ``kind``."""
    raise RuntimeError(f"gateway {job.body['kind']} refused")


def fill(q: Face) -> None:
    """30 delayed jobs on two topics (every third of customer 7), 6 dead ones with two
    errors."""
    for i in range(30):
        q.enqueue("mail" if i % 2 else "sms", {"customer": {"id": 7 if i % 3 == 0 else 100 + i},
                                               "n": i}, id=f"d{i:02d}", delay=600 + i)
    for i in range(6):
        q.enqueue("pay", {"kind": "timeout" if i % 2 else "declined", "n": i}, id=f"x{i}",
                  max_attempts=1)
    run_worker(q, "pay", fail_by_kind)


def every_call(q: Face, scan: int, **filters: Any) -> tuple[list[str], list[int]]:
    """Follow a search's cursors to the end: the ids found and each call's examined count."""
    found: list[str] = []
    examined: list[int] = []
    cursor = None
    for _ in range(200):
        page = q.search(scan=scan, cursor=cursor, **filters)
        found += [job.id for job in page.jobs]
        examined.append(page.examined)
        cursor = page.cursor
        if cursor is None:
            return found, examined
    raise AssertionError("the search never ended")


def test_search_by_body_field_error_text_topic_and_state(make_queue: Any) -> None:
    q = make_queue(partitions=2)
    fill(q)
    found, examined = every_call(q, 7, body=["customer.id=7"])
    assert found == [f"d{i:02d}" for i in range(0, 30, 3)]  # delayed by due time
    assert max(examined) <= 7 and len(examined) >= 36 // 7  # bounded per call, all seen
    found, _ = every_call(q, 4, body=["customer.id=7"], topic="sms")
    assert found == [f"d{i:02d}" for i in range(0, 30, 6)]
    found, _ = every_call(q, 1000, error="TIMEOUT")  # any case; only dead jobs have errors
    assert sorted(found) == ["x1", "x3", "x5"]
    found, _ = every_call(q, 1000, state="dead", body=["kind=declined", "n"])
    assert sorted(found) == ["x0", "x2", "x4"]
    found, _ = every_call(q, 1000, state="delayed", body=["n=3"])  # numbers compare as JSON
    assert found == ["d03"]
    page = q.search(state="dead", error="refused")
    assert page.cursor is None and {j.state for j in page.jobs} == {"dead"}
    assert all("refused" in (j.error or "") for j in page.jobs) and len(page.jobs) == 6


def test_bulk_dry_run_counts_then_cancel_resumes_by_cursor(make_queue: Any) -> None:
    q = make_queue(partitions=2)
    fill(q)
    dry = q.bulk("cancel", state="delayed", body=["customer.id=7"], dry_run=True)
    assert (dry.matched, dry.changed, dry.cursor) == (10, 0, None)
    assert q.stats().topics["sms"].delayed + q.stats().topics["mail"].delayed == 30  # unchanged
    cursor, changed, calls = None, 0, 0
    while True:
        result = q.bulk("cancel", state="delayed", body=["customer.id=7"], scan=8,
                        cursor=cursor)
        assert result.examined <= 8 and result.changed == result.matched
        changed, calls, cursor = changed + result.changed, calls + 1, result.cursor
        if cursor is None:
            break
    assert changed == 10 and calls >= 3
    left = every_call(q, 1000, state="delayed")[0]
    assert len(left) == 20 and not set(left) & {f"d{i:02d}" for i in range(0, 30, 3)}
    assert all(q.get(f"d{i:02d}") is None for i in range(0, 30, 3))


def test_bulk_reschedule_moves_each_job_once(make_queue: Any) -> None:
    q = make_queue()
    for i in range(12):
        q.enqueue("t", {"n": i}, id=f"j{i:02d}", delay=10 + i)
    before = {j.id: j.due for j in q.search(state="delayed").jobs}
    cursor, moved = None, 0
    for _ in range(50):  # the target (1 h away) is past every job: each is met again later
        result = q.bulk("reschedule", state="delayed", delay=3600, scan=5, cursor=cursor)
        moved += result.changed
        cursor = result.cursor
        if cursor is None:
            break
    assert cursor is None and moved == 12
    dues = {j.id: j.due for j in q.search(state="delayed").jobs}
    assert len(set(dues.values())) == 1 and min(dues.values()) > max(before.values()) + 3_000_000


def test_bulk_replay_and_purge_dead_jobs_by_error_text(make_queue: Any) -> None:
    q = make_queue()
    fill(q)
    replayed = q.bulk("replay", error="timeout")
    assert (replayed.matched, replayed.changed) == (3, 3)
    assert sorted(replayed.ids) == ["x1", "x3", "x5"]
    assert {q.get(i).state for i in ("x1", "x3", "x5")} <= {"delayed", "ready"}  # type: ignore[union-attr]
    purged = q.bulk("purge", topic="pay")
    assert purged.changed == 3 and q.stats().topics["pay"].dead == 0
    assert q.get("x0") is None and q.get("x1") is not None


def test_bulk_refuses_what_it_cannot_bound_or_do(make_queue: Any) -> None:
    q = make_queue()
    q.enqueue("t", {}, id="a", delay=60)
    with pytest.raises(ValidationError, match="needs one state"):
        q.bulk("cancel", topic="t")
    with pytest.raises(ValidationError, match="dead jobs only"):
        q.bulk("replay", state="delayed")
    with pytest.raises(ValidationError, match="scan"):
        q.search(scan=10_001)
    with pytest.raises(ValidationError, match="cursor"):
        q.search(state="dead", cursor="delayed:d:1:a")
    with pytest.raises(ValidationError, match="body"):
        q.search(body=["=3"])
    assert q.get("a") is not None


def test_body_filters_compare_as_text_or_json_and_walk_lists() -> None:
    from streamdelay.client.search_plans import JobFilter

    def info(body: Any, error: str | None = None) -> sd.JobInfo:
        return sd.JobInfo("j", "t", "dead", 0, 0, 0, 1, 1.0, body, {}, error=error)

    body = {"flag": True, "n": 3, "none": None, "name": "42", "items": [{"sku": "A1"}]}
    hits = {pair: JobFilter(body=(pair,)).matches(info(body)) for pair in (
        "flag=true", "n=3", "none=null", "name=42", "items.0.sku=A1", "items", "items.1",
        "n=3.0", "flag=True", "missing", "name.x=1")}
    assert hits == {"flag=true": True, "n=3": True, "none=null": True, "name=42": True,
                    "items.0.sku=A1": True, "items": True, "items.1": False, "n=3.0": False,
                    "flag=True": False, "missing": False, "name.x=1": False}
    assert not JobFilter(body=("a=1",)).matches(info(b"raw bytes"))  # not a map: no field
    assert JobFilter(error="GATEWAY").matches(info({}, "RuntimeError: gateway timeout"))
    assert not JobFilter(error="gateway").matches(info({}, None))
