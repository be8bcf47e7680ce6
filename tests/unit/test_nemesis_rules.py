"""The nemesis checker's newer rules on synthetic histories (docs/reliability.md#histories): a
delivery whose stream entry was written before its due time (``promoted_early``), the order of
priorities in a lane (``priority``, tests/system/nemesis/priorities.py), a due time asked with
``at=``, and what a Sentinel failover excuses (an overlap, a callback delivered again, a key's
runs at once) and what it does not (a lost enqueue)."""

from __future__ import annotations

from typing import Any

import pytest

from streamdelay.protocol.keys import partition_of
from tests.system.nemesis.key_limits import check_key_limits
from tests.system.nemesis.priorities import check_priorities, judged_pairs
from tests.unit.test_nemesis_history import T0, History, only


def test_a_delivery_written_before_its_due_time_is_promoted_early_even_by_one_ms() -> None:
    h = History()
    h.enqueue("a", 0, 1000)
    h.run("a", 1005, 1010, due_ms=T0 + 1000, ready_ms=T0 + 1000)  # written at its due ms
    assert h.check() == []
    h.enqueue("b", 0, 1000)
    h.run("b", 1005, 1010, due_ms=T0 + 1000, ready_ms=T0 + 999)
    v = only(h.check(), "promoted_early")
    assert v.job == "b" and "1 ms before its due time" in v.message


def test_a_due_time_asked_with_at_is_the_floor_of_that_ms() -> None:
    h = History()
    h.op("enqueue", "a", 0, 2, "unknown", {"at_ms": T0 + 1000.7})  # no answer: at= bounds it
    h.run("a", 999.5, 1010)
    assert h.check() == []
    h.op("enqueue", "b", 0, 2, "unknown", {"at_ms": T0 + 1000.7})
    h.run("b", 998.5, 1010)
    assert only(h.check(), "early").job == "b"


def failover(h: History, begin: float, end: float) -> None:
    h.fault("failover", "sentinel", begin, end)


def test_a_failover_excuses_a_second_run_it_overlapped_and_nothing_after_it() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 3000, worker="w0:1")
    failover(h, 500, 1500)  # the delivery was undone: delivered again
    h.run("a", 1600, 1700, worker="w1:2")
    assert h.check() == []
    h.enqueue("b", 0, 100)
    h.run("b", 2000, 3000, worker="w0:1")  # started after the failover ended
    h.run("b", 2100, 2200, worker="w1:2")
    assert only(h.check(), "overlap").job == "b"


def test_a_failover_excuses_a_callback_delivered_again_and_a_key_run_beside_another() -> None:
    h = History()
    h.enqueue("bt.0", 0, 0)
    h.run("bt.0", 100, 150)
    h.note("callback", "bt@1", 200, batch="bt", which="1", attempt=1)
    h.run("bt@1", 200, 210)
    failover(h, 300, 900)  # the callback's ack undone: it runs again, attempt 1 again
    h.note("callback", "bt@1", 1000, batch="bt", which="1", attempt=1)
    h.run("bt@1", 1000, 1010)
    assert h.check(batches={"bt": ["bt.0"]}) == []
    for job, start in (("{k1}x", 100), ("{k1}y", 600)):
        h.enqueue(job, 0, 0)
        h.run(job, start, 2000, worker=f"w{start}:1", topic="keyed")
    assert check_key_limits(h.records) == []


def test_a_failover_does_not_excuse_a_lost_enqueue() -> None:
    h = History()
    h.enqueue("a", 0, 100)  # acknowledged with replicas=1: on the replica too
    failover(h, 50, 900)
    assert only(h.check(), "lost").job == "a"


def prio_job(h: History, job: str, priority: int, due: float, entry: str, start: float,
             **extra: Any) -> None:
    h.op("enqueue", job, 0, 2, "ok", {"topic": "prio", "priority": priority},
         due_ms=T0 + due, created=True)
    h.run(job, start, start + 10, entry=entry, topic="prio", **extra)


# ids of one partition of 2 (tests/system/nemesis/priorities.py compares within a partition)
SAME = tuple(j for j in (f"j{i}" for i in range(40)) if partition_of(j, 2) == 0)[:4]


def test_jobs_of_one_lane_taken_by_rank_hold_and_a_lower_priority_taken_first_is_caught(
        ) -> None:
    h = History()
    prio_job(h, SAME[0], 9, 1000, f"{int(T0) + 1000}-0", 1001)
    prio_job(h, SAME[1], 2, 1000, f"{int(T0) + 1000}-1", 1001)
    assert check_priorities(h.records, 2) == [] and judged_pairs(h.records, 2) == 1
    prio_job(h, SAME[2], 8, 999, f"{int(T0) + 1005}-0", 1006)  # taken after priority 2
    v = only(check_priorities(h.records, 2), "priority")
    assert v.job == SAME[1] and SAME[2] in v.message


@pytest.mark.parametrize("case", ["later_due", "other_partition", "retried", "failover"])
def test_a_pair_the_docs_do_not_order_is_not_judged(case: str) -> None:
    other = next(f"j{i}" for i in range(2, 50) if partition_of(f"j{i}", 2) != partition_of(
        SAME[0], 2))
    h = History()
    prio_job(h, SAME[0], 2, 1000, f"{int(T0) + 1000}-0", 1001)
    high = other if case == "other_partition" else SAME[1]
    due = 1001 if case == "later_due" else 1000  # due later: maybe not promoted yet
    attempt = 2 if case == "retried" else 1  # back through the stream, before the lanes
    prio_job(h, high, 9, due, f"{int(T0) + 1003}-0", 1004, attempt=attempt)
    if case == "failover":
        failover(h, 900, 1100)
    assert check_priorities(h.records, 2) == []


def test_two_jobs_of_one_key_running_at_once_break_the_key_limit_unless_a_fault_excuses_it(
        ) -> None:
    h = History()
    for job, start, worker in (("{k1}x", 100, "w0:1"), ("{k1}y", 600, "w1:2"),
                               ("{k2}z", 650, "w1:2")):
        h.enqueue(job, 0, 0)
        h.run(job, start, 2000, worker=worker, topic="keyed")
    v = only(check_key_limits(h.records), "key_limit")
    assert v.job == "k1" and "{k1}y" in v.message
    h.fault("stop", "w0", 300, 1500)  # its lease may lapse a ttr after it was last heard from
    assert check_key_limits(h.records) == []


@pytest.mark.parametrize(("stop_end", "allowed"), [(3200, True), (1300, False)])
def test_a_freeze_between_the_delivery_and_the_start_excuses_the_run_taken_again(
        stop_end: float, allowed: bool) -> None:
    # make nemesis (Sentinel, seed 1): w2 frozen 2.78 s while its blocked read got the
    # delivery; it started the handler after SIGCONT, as w0's reclaim ran it again
    h = History()
    h.enqueue("a", 0, 1000)
    h.fault("stop", "w2", 900, stop_end)
    h.run("a", stop_end + 300, stop_end + 500, worker="w2:1", ready_ms=T0 + 1000)
    h.run("a", stop_end + 400, stop_end + 450, worker="w0:2", ready_ms=T0 + stop_end + 390)
    assert (h.check() == []) is allowed


def test_a_run_noted_between_the_kills_note_and_its_signal_ends_with_that_kill() -> None:
    # make nemesis (seed 2): n1 noted a start 3 ms after the nemesis noted its kill
    h = History()
    for job in ("a", "{k2}x", "{k2}y"):
        h.enqueue(job, 0, 100)
    h.fault("kill", "n1", 1000, 1700, pid=4321)
    h.run("a", 1003, None, worker="n1:4321", topic="keyed")
    h.run("{k2}x", 1003, None, worker="n1:4321", topic="keyed")
    h.run("a", 4500, 4600, worker="w2:99")
    h.run("{k2}y", 4000, 4100, worker="w2:99", topic="keyed")
    h.run("{k2}x", 4200, 4300, worker="w2:99", topic="keyed")  # taken again after its ttr
    h.fault("kill", "n1", 16000, 16500, pid=5555)  # the next kill: of the restarted process
    assert h.check() == [] and check_key_limits(h.records) == []
    h.run("b", 17000, None, worker="n1:4321")  # a pid the kill did not name: runs on
    h.enqueue("b", 0, 100)
    h.run("b", 17100, 17200, worker="w2:99")
    assert only(h.check(), "overlap").job == "b"
