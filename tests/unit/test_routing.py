"""The consumer core's one routing rule (``consume/core/routing.py``), which the Worker's views
and a reserve round both apply: paused before staged before limited before plain; a plain read's
entry runs only on a plain topic, a take's unless its topic is paused; and the core's acting on
it (``consume/core/consumer_core.py``): one sort, one hand-back."""

from __future__ import annotations

import itertools

from streamdelay.consume.core.consumer_core import ConsumerCore, backs, hand_back_calls
from streamdelay.consume.core.routing import LIMITED, PAUSED, PLAIN, STAGED, Routes, route, runs
from streamdelay.consume.core.taking import Entry
from streamdelay.consume.topic_views import TopicViews


def test_the_rule_for_every_combination() -> None:
    for paused, limited, staged in itertools.product((False, True), repeat=3):
        expected = (PAUSED if paused else STAGED if staged else LIMITED if limited else PLAIN)
        assert route(paused, limited, staged) == expected
    assert [runs(r, taken=False) for r in (PAUSED, STAGED, LIMITED, PLAIN)] == [
        False, False, False, True]
    assert [runs(r, taken=True) for r in (PAUSED, STAGED, LIMITED, PLAIN)] == [
        False, True, True, True]


def test_the_workers_views_route_by_the_same_rule() -> None:
    views = TopicViews()
    views.set_paused(frozenset({"p", "pl"}))
    views.set_limited(frozenset({"l", "pl", "sl"}))
    views.set_staged(frozenset({"s", "sl"}))
    topics = ["p", "pl", "l", "s", "sl", "x"]
    assert [views.of(t) for t in topics] == [PAUSED, PAUSED, LIMITED, STAGED, STAGED, PLAIN]
    assert views.plain(topics) == ["x"]
    assert [t for t in topics if views.taken(t)] == ["l", "s", "sl"]
    kept, back = views.split(topics, str)
    assert (kept, back) == (["x"], ["p", "pl", "l", "s", "sl"])
    kept, back = views.split(topics, str, taken=True)
    assert (kept, back) == (["l", "s", "sl", "x"], ["p", "pl"])
    assert isinstance(views, Routes)


def test_a_look_and_the_watches_write_the_same_routes_the_core_sorts_by() -> None:
    """A reserve round's look (``learn``) and the Worker's watches (``set_*``) write one kind of
    routes; the core's ``sort`` acts on them the same for both drivers."""
    core = ConsumerCore("site")
    assert not core.known_plain("t")  # never looked at: the look comes first
    assert core.learn("t", paused=False, limited=False) == PLAIN and core.known_plain("t")
    assert core.learn("t", paused=False, limited=True) == LIMITED  # staged: not looked at
    assert core.learn("t", paused=False, limited=True, staged=True) == STAGED
    assert core.learn("t", paused=False, limited=False) == STAGED  # the last answer stands
    assert core.learn("t", paused=True, limited=False, staged=False) == PAUSED
    entries = [Entry(0, "t", "1-0", {b"id": b"a"}), Entry(0, "u", "2-0", {b"id": b"b"})]
    assert core.sort(entries) == ([entries[1]], [entries[0]])
    worker = ConsumerCore("site", routes=TopicViews())
    assert isinstance(worker.routes, TopicViews)
    worker.routes.set_paused(frozenset({"t"}))  # type: ignore[attr-defined]
    assert worker.sort(entries) == core.sort(entries)
    assert worker.sort(entries, taken=True) == ([entries[1]], [entries[0]])


def test_the_one_hand_back_is_a_release_per_partition_and_one_free_of_the_leases() -> None:
    rows, others = backs([Entry(2, "t", "5-0", {b"id": b"c"}, leased=True),
                          Entry(0, "t", "1-0", {b"id": b"a"}), Entry(0, "t", "2-0", {}),
                          Entry(0, "u", "3-0", {b"id": b"b"})])
    assert [entry.entry_id for entry in others] == ["2-0"]  # not a job's entry: opened instead
    calls = hand_back_calls("q", "g", rows)
    assert [call.script.name for call in calls] == ["releaseJobs", "releaseJobs", "freeLeases"]
    assert calls[0].args == ("g", "t", "a", "1-0", "u", "b", "3-0")  # partition 0 first
    assert calls[1].args == ("g", "t", "c", "5-0")
    assert calls[2].args == ("t", "2:5-0")  # the lease member of partition 2's entry
    assert hand_back_calls("q", "g", []) == []
    later = hand_back_calls("q", "g", rows, later_ms=2000)  # a worker's last hand-back
    assert [call.script.name for call in later] == [
        "releaseJobsLater", "releaseJobsLater", "freeLeases"]
    assert later[1].args == ("g", 2000, "t", "c", "5-0")


def test_an_entry_that_is_not_a_jobs_is_never_handed_back_whatever_the_route() -> None:
    """The core's rule for every driver: an entry without a job id runs (the driver's open
    step drops it at once with its reason), even when the route sends the job entries back."""
    core = ConsumerCore("site")
    core.learn("t", paused=True, limited=False)
    job, foreign = Entry(0, "t", "1-0", {b"id": b"a"}), Entry(0, "t", "2-0", {b"foo": b"x"})
    assert core.sort([job, foreign]) == ([foreign], [job])
    assert core.sort([job, foreign], taken=True) == ([foreign], [job])
