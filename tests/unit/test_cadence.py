"""The process's upkeep scheduler (``consume/core/cadence.py``): a duty is handed out once per
interval per scope, whoever asks; a held site's duty to nobody; a prune waits its first
interval; a worker's own pass counts for the process."""

from __future__ import annotations

from streamdelay.consume.core.cadence import PRUNE, RECLAIM, REMEMBERED, Cadence, site_of

SITE = site_of("redis://h:1/0", "q")


def test_one_pass_per_interval_whoever_asks() -> None:
    cadence = Cadence()
    asks = [cadence.due(RECLAIM, SITE, ("g", "t"), now, 1.0) for now in (0.0, 0.1, 0.5, 0.99)]
    assert asks == [True, False, False, False]
    assert cadence.due(RECLAIM, SITE, ("g", "t"), 1.0, 1.0)
    assert cadence.due(RECLAIM, SITE, ("g", "u"), 1.0, 1.0)  # another pair: its own
    assert cadence.due(RECLAIM, site_of("redis://h:2/0", "q"), ("g", "t"), 1.0, 1.0)
    assert cadence.taken[RECLAIM] == 4


def test_a_held_site_hands_its_duty_to_nobody() -> None:
    cadence = Cadence()
    with cadence.holding(RECLAIM, SITE):
        assert cadence.held(RECLAIM, SITE)
        assert not cadence.due(RECLAIM, SITE, ("g", "t"), 10.0, 1.0)
        assert cadence.due(PRUNE, SITE, ("g", "t"), 10.0, 60.0)  # only the held duty
    assert not cadence.held(RECLAIM, SITE)
    assert cadence.due(RECLAIM, SITE, ("g", "t"), 10.0, 1.0)


def test_a_prune_waits_its_first_interval_and_ran_counts() -> None:
    cadence = Cadence()
    assert not cadence.due(PRUNE, SITE, ("g", "t"), 0.0, 60.0, first=60.0)
    assert not cadence.due(PRUNE, SITE, ("g", "t"), 59.0, 60.0, first=60.0)
    assert cadence.due(PRUNE, SITE, ("g", "t"), 60.0, 60.0, first=60.0)
    cadence.ran(RECLAIM, SITE, ("g", "t"), 100.0, 1.0)  # a worker's own pass
    assert not cadence.due(RECLAIM, SITE, ("g", "t"), 100.5, 1.0)
    cadence.due_now(SITE)
    assert cadence.due(RECLAIM, SITE, ("g", "t"), 100.5, 1.0)


def test_memory_is_bounded() -> None:
    cadence = Cadence()
    for i in range(REMEMBERED * 3):
        cadence.due(RECLAIM, SITE, ("g", str(i)), 0.0, 1e9)
    assert len(cadence._next) <= REMEMBERED
