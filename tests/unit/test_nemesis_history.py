"""The nemesis history and its checker (docs/reliability.md#histories), on synthetic histories:
one that holds, and for each rule one that breaks it, its violation found with the smallest
slice (the job's records and the faults active meanwhile); files written and read back."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.system.nemesis.history import (
    Allowances,
    Record,
    Recorder,
    Violation,
    check,
    format_report,
    load,
)

ALLOW = Allowances.from_docs(3000)  # bound 1700 ms
T0 = 1_000_000.0


class History:
    """A synthetic history, times in ms after T0."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.seqs = itertools.count()

    def add(self, process: str, seq: int, kind: str, phase: str | None, job: str | None,
            t: float, fields: dict[str, Any]) -> Record:
        record = Record(process, seq, kind, phase, job, T0 + t, fields)
        self.records.append(record)
        return record

    def op(self, kind: str, job: str, t: float, done: float | None, phase: str = "ok",
           invoke: dict[str, Any] | None = None, **answer: Any) -> list[Record]:
        seq = next(self.seqs)
        out = [self.add("producer-a", seq, kind, "invoke", job, t, invoke or {})]
        if done is not None:
            out.append(self.add("producer-a", seq, kind, phase, job, done, answer))
        return out

    def enqueue(self, job: str, t: float, due: float, phase: str = "ok") -> list[Record]:
        return self.op("enqueue", job, t, t + 2, phase, {"delay_ms": due - t},
                       **({"due_ms": T0 + due, "created": True} if phase == "ok" else {}))

    def note(self, kind: str, job: str | None, t: float, process: str = "worker-w1-1",
             phase: str | None = None, **fields: Any) -> Record:
        return self.add(process, next(self.seqs), kind, phase, job, t, fields)

    def run(self, job: str, start: float, end: float | None, worker: str = "w1:1",
            outcome: str = "ok", attempt: int = 1, **extra: Any) -> list[Record]:
        process = f"worker-{worker.replace(':', '-')}"
        out = [self.note("start", job, start, process, attempt=attempt, worker=worker, **extra)]
        if end is not None:
            out.append(self.note("end", job, end, process, attempt=attempt, worker=worker,
                                 outcome=outcome, value=extra.get("value")))
        return out

    def fault(self, name: str, target: str, begin: float, end: float | None,
              **extra: Any) -> list[Record]:
        out = [self.note("fault", None, begin, "nemesis", "begin", name=name, target=target,
                         **extra)]
        if end is not None:
            out.append(self.note("fault", None, end, "nemesis", "end", name=name,
                                 target=target, **extra))
        return out

    def check(self, **kw: Any) -> list[Violation]:
        return check(self.records, ALLOW, **kw)


def only(violations: list[Violation], rule: str) -> Violation:
    """The one violation, of ``rule``."""
    assert [v.rule for v in violations] == [rule], format_report(violations)
    return violations[0]


def same(records: list[Record], expected: list[Record]) -> bool:
    return sorted(map(id, records)) == sorted(map(id, expected))


def test_a_history_that_holds_every_rule_has_no_violation() -> None:
    h = History()
    h.fault("partition", "w1", 0, 500)  # short: no run crosses it
    h.enqueue("a", 0, 1000)
    h.run("a", 1000.5, 1100, value=7)
    h.note("result", "a", 5000, process="producer-a", state="succeeded", value=7)
    h.enqueue("b", 10, 2000)
    h.op("cancel", "b", 20, 25, cancelled=True)
    h.enqueue("c", 30, 100, phase="unknown")  # may be lost
    h.enqueue("d", 40, 9000)
    h.note("final_state", "d", 5000, process="runner", state="delayed")
    for job, t in (("ch.0", 200), ("ch.1", 300), ("ch.2", 400)):
        h.enqueue(job, 0, 0)
        h.run(job, t, t + 50)
    for m in ("bt.0", "bt.1"):
        h.enqueue(m, 0, 0)
        h.run(m, 100, 150)
    h.note("callback", "bt@1", 200, batch="bt", which="1", attempt=1)
    h.run("bt@1", 200, 210)
    h.note("callback", "bt@1", 3500, batch="bt", which="1", attempt=2)  # redelivered
    assert h.check(chains={"ch": ["ch.0", "ch.1", "ch.2"]}, batches={"bt": ["bt.0", "bt.1"]}
                   ) == []


def test_an_acknowledged_enqueue_never_run_is_lost_with_its_records_and_faults() -> None:
    h = History()
    mine = h.enqueue("a", 0, 100)
    kill = h.fault("kill_redis", "redis", 50, 60)
    h.fault("partition", "w1", -500, -400)  # over before the enqueue: not in the slice
    h.enqueue("b", 0, 100)
    h.run("b", 100, 120)
    v = only(h.check(), "lost")
    assert v.job == "a"
    assert same(v.slice, mine + kill)


@pytest.mark.parametrize("accounted", ["unknown", "cancelled", "final_state", "dead"])
def test_an_enqueue_accounted_for_is_not_lost(accounted: str) -> None:
    h = History()
    h.enqueue("a", 0, 100, phase="unknown" if accounted == "unknown" else "ok")
    if accounted == "cancelled":
        h.op("cancel", "a", 10, 12, cancelled=True)
    elif accounted == "final_state":
        h.note("final_state", "a", 900, process="runner", state="dead")
    elif accounted == "dead":
        h.run("a", 100, 110, outcome="dead")
    assert h.check() == []


def test_a_final_state_missing_does_not_account_for_an_enqueue() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.note("final_state", "a", 900, process="runner", state="missing")
    assert only(h.check(), "lost").job == "a"


def test_a_run_before_its_due_time_is_early_within_one_ms_is_not() -> None:
    h = History()
    h.enqueue("a", 0, 1000)
    h.run("a", 999.2, 1010)
    assert h.check() == []
    h.enqueue("b", 0, 1000)
    runs = h.run("b", 995, 1010)
    v = only(h.check(), "early")
    assert v.job == "b" and "5.0 ms" in v.message
    assert same(v.slice, [r for r in h.records if r.job == "b"]) and runs[0] in v.slice


def test_the_due_time_of_a_reschedule_answered_before_the_delivery_holds() -> None:
    h = History()
    h.enqueue("a", 0, 100)  # answered at +2
    h.op("reschedule", "a", 20, 30, invoke={"delay_ms": 5000}, found=True, due_ms=T0 + 5020)
    h.run("a", 110, 120, ready_ms=T0 + 100)  # its entry written after the reschedule: early
    assert only(h.check(), "early").job == "a"


def test_a_delivery_before_a_reschedule_took_effect_keeps_the_old_due_time() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.op("reschedule", "a", 101, 130, invoke={"delay_ms": 5000}, found=True, due_ms=T0 + 5101)
    h.run("a", 131, 140, ready_ms=T0 + 100)  # delivered at 100..131: maybe before it
    h.op("reschedule", "b", 0, 5, found=False, due_ms=T0 + 9000)  # found nothing: no effect
    h.enqueue("b", 0, 50)
    h.run("b", 60, 70)
    assert h.check() == []


def test_a_run_before_the_due_time_its_delivery_carries_is_early() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 150, 160, due_ms=T0 + 200)  # the server delivered it saying due at 200
    assert only(h.check(), "early").job == "a"


def test_a_run_of_a_refused_enqueue_is_a_run_of_nothing() -> None:
    h = History()
    h.enqueue("a", 0, 100, phase="fail")
    h.run("a", 150, 160)
    assert only(h.check(), "unenqueued_run").job == "a"


def test_two_runs_of_one_job_at_once_overlap() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="w1:1")
    h.run("a", 4000, 4100, worker="w2:2")
    h.enqueue("b", 0, 100)
    h.run("b", 100, 200, worker="w1:1")
    h.run("b", 200, 300, worker="w2:2")  # one after the other: fine
    v = only(h.check(), "overlap")
    assert v.job == "a" and "1000 ms" in v.message
    assert same(v.slice, [r for r in h.records if r.job == "a"])


@pytest.mark.parametrize(("target", "length", "allowed"), [
    ("w1", 2500, True),   # the first run's worker, cut off longer than 1700 ms
    ("w1", 1500, False),  # shorter than the bound: the docs promise no overlap
    ("w2", 2500, False),  # another worker cut off: no excuse for w1's run
])
def test_an_overlap_is_allowed_only_past_the_documented_cut_off(
        target: str, length: float, allowed: bool) -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="w1:1")
    fault = h.fault("partition", target, 500, 500 + length)
    h.run("a", 3700, 3800, worker="w2:2")
    violations = h.check()
    if allowed:
        assert violations == []
    else:
        assert same(only(violations, "overlap").slice,
                    [r for r in h.records if r.job == "a"] + fault)


def test_an_overlap_is_never_allowed_when_the_docs_allow_none() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="w1:1")
    h.fault("sigstop", "w1:1", 500, 4000)
    h.run("a", 3700, 3800, worker="w2:2")
    assert h.check() == []
    strict = Allowances(ttr_ms=3000, overlap_allowed_when_cutoff_longer_than_ms=None)
    assert only(check(h.records, strict), "overlap").job == "a"


def test_a_run_without_an_end_lasts_until_its_worker_is_killed() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, None, worker="w1:1")
    h.fault("kill9", "w1", 3000, None)
    h.run("a", 6100, 6200, worker="w2:2")
    assert h.check() == []
    h.enqueue("b", 0, 100)
    h.run("b", 100, None, worker="w3:3")  # no kill of w3: it ran on
    h.run("b", 6100, 6200, worker="w2:2")
    v = only(h.check(), "overlap")
    assert v.job == "b" and "no end note" in v.message


def test_a_run_delivered_after_a_confirmed_cancel_is_a_violation() -> None:
    h = History()
    h.enqueue("a", 0, 1000)
    h.op("cancel", "a", 10, 20, cancelled=True)
    h.run("a", 1000, 1010)
    v = only(h.check(), "run_after_cancel")
    assert v.job == "a" and same(v.slice, [r for r in h.records if r.job == "a"])


@pytest.mark.parametrize("case", ["ran_before", "not_found", "enqueued_again", "unknown"])
def test_a_cancel_excuses_what_it_may_not_have_stopped(case: str) -> None:
    h = History()
    h.enqueue("a", 0, 100)
    if case == "ran_before":
        h.run("a", 100, 300)
        h.op("cancel", "a", 150, 160, cancelled=True)
    elif case == "not_found":
        h.op("cancel", "a", 10, 20, cancelled=False)
        h.run("a", 100, 110)
    elif case == "enqueued_again":
        h.op("cancel", "a", 10, 20, cancelled=True)
        h.enqueue("a", 30, 100)
        h.run("a", 100, 110)
    else:
        h.op("cancel", "a", 10, None)  # never answered: may not have happened
        h.run("a", 100, 110)
    assert h.check() == []


def test_a_result_that_no_run_returned_is_a_phantom() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 110, value=4)
    h.note("result", "a", 900, process="producer-a", state="succeeded", value=5)
    h.note("result", "a", 900, process="producer-a", state="dead", value=None)  # not checked
    v = only(h.check(), "phantom_result")
    assert v.job == "a" and "5" in v.message


def test_each_batch_callback_exactly_once() -> None:
    batches = {"bt": ["bt.0"], "bu": ["bu.0"], "bv": ["bv.0"]}
    h = History()
    for member in ("bt.0", "bu.0", "bv.0"):
        h.enqueue(member, 0, 0)
        h.run(member, 10, 20)
    h.note("callback", "bt@1", 30, batch="bt", which="1", attempt=1)
    h.note("callback", "bt@1", 40, batch="bt", which="1", attempt=1)  # a second first delivery
    h.note("callback", "bu@2", 15, batch="bu", which="2", attempt=1)  # before bu.0 ended
    violations = h.check(batches=batches)  # bv: no callback at all
    assert sorted((v.rule, v.job) for v in violations) == [
        ("callback", "bt"), ("callback", "bu"), ("callback", "bv")], format_report(violations)
    twice = next(v for v in violations if v.job == "bt")
    assert "2 times" in twice.message
    assert all(r.job == "bt@1" for r in twice.slice)


def test_a_chain_member_started_before_the_previous_one_succeeded() -> None:
    h = History()
    for job in ("c.0", "c.1", "c.2"):
        h.enqueue(job, 0, 0)
    h.run("c.0", 10, 100)
    h.run("c.1", 90, 150)  # 10 ms before c.0 ended
    h.run("c.2", 160, 170)
    h.enqueue("d.0", 0, 0)
    h.enqueue("d.1", 0, 0)
    h.run("d.0", 10, 20, outcome="fail")
    h.note("final_state", "d.0", 900, process="runner", state="dead")
    h.run("d.1", 30, 40)  # d.0 never succeeded
    violations = h.check(chains={"c": ["c.0", "c.1", "c.2"], "d": ["d.0", "d.1"]})
    assert [(v.rule, v.job) for v in violations] == [("chain", "c.1"), ("chain", "d.1")]
    assert "never succeeded" in violations[1].message
    assert {r.job for r in violations[0].slice} == {"c.0", "c.1"}


def test_the_report_shows_rule_job_times_from_the_start_and_the_faults() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.fault("partition", "w9", 50, 80)
    text = format_report(h.check())
    assert "[lost] a:" in text and "FAULT begin partition on w9" in text
    assert "+0.000 s" in text and "+0.050 s" in text
    assert format_report([]) == "history checked: no violation"


# --- the files -----------------------------------------------------------------------------

def test_a_recorder_writes_lines_that_load_reads_back_in_time_order(tmp_path: Path) -> None:
    producer = Recorder(tmp_path, "producer-a")
    worker = Recorder(tmp_path, "worker-w1")
    seq = producer.invoke("enqueue", "a", delay_ms=10)
    producer.complete(seq, "ok", due_ms=123, created=True)
    worker.note("start", "a", attempt=1, worker="w1:1")
    worker.note("fault", None, phase="begin", name="partition", target="w1")
    records = load(tmp_path)
    assert [(r.process, r.seq, r.kind, r.phase) for r in records] == [
        ("producer-a", 0, "enqueue", "invoke"), ("producer-a", 0, "enqueue", "ok"),
        ("worker-w1", 0, "start", None), ("worker-w1", 1, "fault", "begin")]
    assert records[1].job == "a" and records[1].fields == {"due_ms": 123, "created": True}
    assert records[3].fields == {"name": "partition", "target": "w1"}
    assert all(a.time_ms <= b.time_ms for a, b in itertools.pairwise(records))
    with pytest.raises(ValueError):
        producer.complete(seq, "ok")  # already complete


def test_a_torn_last_line_is_skipped_and_a_restart_appends_after_it(tmp_path: Path) -> None:
    first = Recorder(tmp_path, "p")
    first.note("start", "a")
    first.note("end", "a")
    first.close()
    path = tmp_path / "p.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:25])  # killed mid-write
    assert [r.seq for r in load(tmp_path)] == [0, 1]
    again = Recorder(tmp_path, "p")  # the same process name, restarted
    again.note("start", "b")
    assert [(r.seq, r.job) for r in load(tmp_path)] == [(0, "a"), (1, "a"), (2, "b")]
    (tmp_path / "flows-x.jsonl").write_text(json.dumps({"kind": "chain"}) + "\n")
    assert len(load(tmp_path)) == 3  # other .jsonl files of the run are not records


def test_threads_of_one_process_number_their_records_without_gaps(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path, "w")

    def write(n: int) -> None:
        for i in range(200):
            recorder.note("start", f"j{n}-{i}", payload="x" * 300)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.seq for r in load(tmp_path)) == list(range(800))


@pytest.mark.parametrize(("name", "allowed"), [
    ("cut_silent", True), ("cut_loud", True), ("stop", True),  # the nemesis's cut-offs
    ("degrade", False),  # a slow, lossy link: the docs promise no overlap through it
    ("redis_restart", False),
])
def test_the_nemesis_faults_that_cut_a_worker_off(name: str, allowed: bool) -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="n0:4321")  # recorded by process worker-n0-4321
    h.fault(name, "n0", 500, 3000)  # the nemesis names the fleet member
    h.run("a", 3700, 3800, worker="w1:99")
    assert (h.check() == []) is allowed


def test_a_kill_of_the_fleet_member_ends_the_runs_of_its_process() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, None, worker="n0:4321")
    h.fault("kill", "n0", 200, 1200)  # restarted 1 s later under a new pid
    h.run("a", 3300, 3400, worker="n0:5555")
    assert h.check() == []


def test_a_final_state_read_back_as_succeeded_keeps_a_value_some_run_returned() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 110, value=None)
    h.note("final_state", "a", 900, process="final", state="succeeded", value=None)
    assert h.check() == []
    h.note("final_state", "a", 901, process="final", state="succeeded", value=3)
    assert only(h.check(), "phantom_result").job == "a"


@pytest.mark.parametrize(("name", "hosts", "allowed"), [
    ("cut_silent", ["n0", "n1"], True),  # Redis cut off from every host in a namespace: n0 too
    ("cut_silent", ["n1"], False),       # n0 was not in a namespace: it kept its contact
    ("stop", None, False),               # Redis stopped: an outage, which excuses nothing
])
def test_a_fault_on_redis_cuts_off_the_hosts_it_names(
        name: str, hosts: list[str] | None, allowed: bool) -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="n0:4321")
    extra = {} if hosts is None else {"hosts": hosts}
    h.fault(name, "redis", 500, 3000, **extra)
    h.run("a", 3700, 3800, worker="w1:99")
    assert (h.check() == []) is allowed


def test_the_report_counts_each_rule_and_shows_the_first_violations() -> None:
    h = History()
    for i in range(5):
        h.enqueue(f"j{i}", 0, 100)
    violations = h.check()
    text = format_report(violations, limit=2)
    assert text.startswith("5 violation(s): lost 5")
    assert text.count("[lost]") == 2 and "... and 3 more" in text
    assert format_report(violations, limit=None).count("[lost]") == 5


@pytest.mark.parametrize(("second", "allowed"), [(3200, True), (2800, False)])
def test_a_pull_consumers_run_may_run_again_once_silent_past_its_ttr(
        second: float, allowed: bool) -> None:
    h = History()
    h.enqueue("a", 0, 100)
    h.run("a", 100, 5000, worker="http-h0:7", pull=True)  # its ack held up (serve stopped)
    h.run("a", 100 + second, 100 + second + 50, worker="http-h1:8", pull=True)
    assert (h.check() == []) is allowed


def test_a_violation_reads_as_its_part_of_the_report() -> None:
    h = History()
    h.enqueue("a", 0, 100)
    v = only(h.check(), "lost")
    assert str(v).startswith("[lost] a: enqueue acknowledged at +2 ms")
    assert str(v) in format_report([v])
