"""The consumer core's one routing rule (``consume/core/routing.py``), which the Worker's views
and a
reserve round both apply: paused before staged before limited before plain; a plain read's
entry runs only on a plain topic, a take's unless its topic is paused."""

from __future__ import annotations

import itertools

from streamdelay.consume.core.routing import LIMITED, PAUSED, PLAIN, STAGED, Routes, route, runs
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
