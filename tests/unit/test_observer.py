"""telemetry/observer.py without a server: what one report of a driver becomes (the
dashboard's record, the driver's metrics), and when a driver without a loop flushes."""

from __future__ import annotations

import time

from streamdelay.telemetry.lateness import FLUSH_EVERY, PRIORITY_MARK, bucket_of
from streamdelay.telemetry.observer import ConsumerObserver


class Reporter:
    """A ``Reporter`` that keeps what it was told."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, str, float, str | None]] = []
        self.settles: list[tuple[str, str, str, int]] = []

    def started(self, topic: str, group: str, late_ms: float, priority: str | None) -> None:
        self.starts.append((topic, group, late_ms, priority))

    def settled(self, topic: str, group: str, outcome: str, count: int) -> None:
        self.settles.append((topic, group, outcome, count))


def test_a_start_is_counted_by_topic_priority_and_reporter() -> None:
    observer = ConsumerObserver("q", "me", clock_offset_ms=0.0)
    reporter = Reporter()
    observer.reporters.append(reporter)
    due = int(time.time() * 1000) - 2_000  # two seconds late
    late = observer.started("t", "g", due, "3", "j1")
    assert 1_900 < late < 60_000
    bucket = bucket_of(late)
    assert observer.record.counts == {("t", bucket): 1, ("t" + PRIORITY_MARK + "3", bucket): 1}
    assert [(topic, group, priority) for topic, group, _, priority in reporter.starts] == [
        ("t", "g", "3")]


def test_an_early_start_is_not_late() -> None:
    observer = ConsumerObserver("q", "me", clock_offset_ms=0.0)
    assert observer.started("t", "g", int(time.time() * 1000) + 60_000) == 0.0


def test_outcomes_count_in_the_throughput_as_a_workers() -> None:
    observer = ConsumerObserver("q", "me")
    reporter = Reporter()
    observer.reporters.append(reporter)
    for outcome in ("handled", "retried", "dead", "expired", "dropped", "released"):
        observer.settled("t", "g", outcome)
    observer.settled("t", "g", "handled", count=2)
    assert observer.record.counts == {("t", "ok"): 3, ("t", "retried"): 1, ("t", "dead"): 2}
    assert reporter.settles[-1] == ("t", "g", "handled", 2)
    assert len(reporter.settles) == 7  # the metrics see every outcome


def test_a_driver_without_a_loop_flushes_once_the_interval_passed() -> None:
    observer = ConsumerObserver("q", "me", clock_offset_ms=0.0)
    observer.settled("t", "g", "handled")
    now = time.monotonic()
    assert observer.due_flush(now) is None  # not yet
    call = observer.due_flush(now + FLUSH_EVERY + 0.1)
    assert call is not None and call.script.name == "recordLateness"
    assert observer.record.counts == {}  # taken: counted again from zero
    assert observer.due_flush(now + 2 * FLUSH_EVERY + 0.2) is None  # nothing counted since


def test_the_clock_is_measured_once() -> None:
    observer = ConsumerObserver("q", "me")
    assert observer.needs_clock
    observer.clock_offset_ms = 12.5
    assert not observer.needs_clock
