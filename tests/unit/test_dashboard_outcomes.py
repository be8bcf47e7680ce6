"""How a job ended on its page, and what a search has left (docs/dashboard.md#results,
#search-and-bulk): pure, the timeline's plan driven with recorded replies."""

from __future__ import annotations

from typing import Any

from streamdelay.base.models import JobInfo, JobResult, QueueStats, TopicStats
from streamdelay.client.queue import AsyncQueue
from streamdelay.web.dashboard import job_outcomes as outcomes
from streamdelay.web.dashboard.finding import Filter, left_to_search

NOW = 1_800_000_000_000


def _info(state: str, **changes: Any) -> JobInfo:
    base: dict[str, Any] = dict(id="j1", topic="t", state=state, due=NOW - 9000,
                                created=NOW - 10_000, attempts=0, max_attempts=3, ttr=60.0,
                                body={"n": 1}, headers={}, ttr_ms=60_000)
    base.update(changes)
    return JobInfo(**base)


def _entry(ms: int, job_id: str, kind: str) -> tuple[bytes, list[bytes]]:
    return (f"{ms}-0".encode(), [b"k", kind.encode(), b"i", job_id.encode(), b"t", b"t",
                                 b"a", b"1", b"at", str(ms).encode(), b"d", b""])


def _timeline(head: list[Any], tail: list[Any], on: bool = True) -> outcomes.Timeline:
    plan = outcomes.timeline_plan(AsyncQueue("q", "redis://127.0.0.1:1/0"), "j1", NOW, None)
    next(plan)  # the switch and both reads, one round trip
    try:
        plan.send([b"10000" if on else None, head, tail, b"1-0|0.5" if on else None])
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    raise AssertionError("the plan asked for more")


def test_the_timeline_keeps_the_jobs_events_in_order_and_says_when_it_is_partial() -> None:
    head = [_entry(NOW + i, "j1" if i % 2 else "other", "enqueued" if i == 1 else "promoted")
            for i in range(outcomes.TIMELINE_ENTRIES)]
    tail = [_entry(NOW + 10_000 - i, "j1" if i == 0 else "other", "succeeded")
            for i in range(outcomes.TIMELINE_ENTRIES)]
    found = _timeline(head, tail)
    assert found.on and found.partial  # a gap between the two reads
    assert [r.kind for r in found.rows][:2] == ["enqueued", "promoted"]
    assert found.rows[-1].kind == "succeeded" and found.rows[-1].at == NOW + 10_000
    whole = _timeline(head[:3], list(reversed(head[:3])))  # the reads met: nothing left out
    assert not whole.partial and [r.kind for r in whole.rows] == ["enqueued"]
    assert found.progress == "0.5"  # the last progress reported, its delivery's id cut off
    off = _timeline([], [], on=False)
    assert not off.on and off.progress is None


def test_outcome_of_a_kept_result_a_tombstone_and_a_running_job() -> None:
    ok = JobResult(id="j1", state="succeeded", value={"rows": 42}, finished=NOW - 2000)
    shown = outcomes.outcome(None, ok, outcomes.Timeline(False), NOW)
    assert shown is not None and shown.value is not None and '"rows": 42' in shown.value
    assert dict(shown.fields)["finished"].endswith("(2.0 s ago)")
    ended = outcomes.Timeline(True, [outcomes.EventRow("succeeded", "", 1, "", NOW - 500)])
    tomb = outcomes.outcome(_info("done"), None, ended, NOW)
    assert tomb is not None and dict(tomb.fields)["finished"].endswith("(500 ms ago)")
    assert dict(tomb.fields)["result"].startswith("not kept")
    kept = outcomes.outcome(_info("done"), ok, ended, NOW)
    assert kept is not None and dict(kept.fields)["outcome"] == "succeeded"
    assert outcomes.outcome(_info("reserved"), None, ended, NOW) is None
    gone = JobResult(id="j1", state="cancelled", error="cancelled", finished=NOW - 1)
    view = outcomes.result_view(gone)
    assert (view.state, view.fields, view.actions, view.body) == (
        "cancelled", [("state", "cancelled")], (), "")


def test_a_search_says_about_how_many_jobs_are_left() -> None:
    stats = QueueStats("q", NOW, {
        "a": TopicStats("a", 100, 20, 5, 3, 0, None, waiting=2),
        "b": TopicStats("b", 1000, 0, 0, 0, 0, None)})
    assert left_to_search(stats, Filter(topic="a"), 0) == 130
    assert left_to_search(stats, Filter(topic="a"), 100) == 30
    assert left_to_search(stats, Filter(state="delayed"), 250) == 850
    assert left_to_search(stats, Filter(topic="a", state="dead"), 250) == 0  # never below 0
