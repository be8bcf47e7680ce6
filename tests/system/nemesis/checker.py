"""The checker of a nemesis history (docs/reliability.md#histories): each rule of SPEC §22 over
the timeline (timeline.py), each failure a ``Violation`` with the smallest slice of the history
that shows it: the records of its job(s) and of the faults active meanwhile.

Rules (``Violation.rule``):

- ``lost``: an enqueue answered ``ok`` whose job never ended for good afterwards (an ``end``
  note with outcome ``ok``/``succeeded``/``dead``), was not cancelled (a cancel ``ok`` with
  ``cancelled`` true, or ``unknown``) and has no ``final_state`` note with a state other than
  ``missing``. An ``unknown`` enqueue may be lost.
- ``early``: a run started more than 1 ms before the due time of the enqueue or reschedule
  that set it (its answered ``due_ms``, else the invoke's ``due_ms``, else its ``at_ms``, else
  invoke time plus ``delay_ms``: a lower bound, the server's clock being this one), or before
  the ``due_ms`` its start note gives (``job.due``); ``unenqueued_run``: a run of a job whose
  every enqueue was refused (``fail``) or invoked after the run started. An operation answered ok is
  replaced by one invoked after that answer once the later one is answered, judged at the
  run's delivery: its start note's ``ready_ms`` (the ms part of ``job.entry_id``, the server
  time its stream entry was written, never after its delivery), else its start time.
- ``promoted_early``: a run whose delivery's stream entry was written (``ready_ms``, the ms of
  its entry id: the server clock) before the due time the delivery carries (``due_ms``): both
  on the server clock in whole ms, so by even 1 ms (a promotion, a take or a requeue writes the
  entry at a server time at or after the job's due time).
- ``overlap``: two runs of one job overlapping in time. A run with no ``end`` note lasts to
  its worker's kill (a ``kills`` fault naming it), else to the end of the history. Allowed
  only as the docs allow it (docs/guarantees.md#never-twice-at-once): the first run's worker
  was cut off from Redis (a ``cuts_off`` fault naming it, between the first run's delivery,
  ``ready_ms``, and the second run's start) for longer than
  ``Allowances.overlap_allowed_when_cutoff_longer_than_ms`` (``2/3 ttr - 0.3 s``:
  ``Allowances.from_docs``); never in one worker process. A pull
  consumer's run (its start note has ``pull=True``: a reservation nobody touches) may be run
  again elsewhere once it was silent past its ttr (docs/guarantees.md, pull consumers): the
  second run started more than ``ttr_ms`` after the first. A failover (timeline.py: a fault
  that ``undoes``) active between the first run's delivery and the second's start excuses
  it: a failover can undo a delivery (docs/guarantees.md#durability-across-failover).
- ``run_after_cancel``: a run delivered (as above) after a cancel answered ``ok`` with
  ``cancelled`` true, with no enqueue of that id invoked after the cancel was.
- ``phantom_result``: a ``result`` note (state ``succeeded`` or none), or a ``final_state``
  note with state ``succeeded``, whose ``value`` is not the ``value`` of an ``end`` with
  outcome ``ok``/``succeeded`` of that job.
- ``callback``: for each batch, callbacks noted (``callback`` notes: ``batch=``, ``which=``
  and ``attempt=``; one note per run of the callback's handler): each callback exactly once,
  i.e. one note of its first delivery (``attempt`` 1; a note of a later attempt is the
  at-least-once redelivery of a run that was cut off, docs/reliability.md; a second first
  delivery after a failover, which can undo an ack, is excused); a batch of
  ``batches`` with none is a violation; a callback started before every member had ended.
- ``chain``: a member of a chain started before the previous member's first successful end
  (or that member never succeeded).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.system.nemesis.timeline import FINAL, SUCCESS, Op, Run, Timeline, timeline

if TYPE_CHECKING:
    from tests.system.nemesis.history import Record

GRANULARITY_MS = 1.0  # due times are whole ms on the server clock
LOST_STATES = frozenset({"missing", "absent", "unknown", "none", ""})


@dataclass
class Allowances:
    """What the docs allow: the jobs' ttr, and the cut-off past which overlaps may happen
    (None: never)."""

    ttr_ms: float
    overlap_allowed_when_cutoff_longer_than_ms: float | None

    @classmethod
    def from_docs(cls, ttr_ms: float) -> Allowances:
        """The bound of docs/guarantees.md#never-twice-at-once: a worker cut off for longer
        than ``2/3 ttr - 0.3 s`` may lose its jobs to another while its handlers run."""
        return cls(ttr_ms=ttr_ms, overlap_allowed_when_cutoff_longer_than_ms=ttr_ms * 2 / 3 - 300)


@dataclass
class Violation:
    """One failure: its rule, its job, what happened, and the slice of the history showing it
    (``origin_ms``: the history's first time, that the report counts from)."""

    rule: str
    job: str | None
    message: str
    slice: list[Record]
    origin_ms: float = 0.0

    def __str__(self) -> str:
        """The violation as ``format_report`` shows it."""
        return "\n".join([f"[{self.rule}] {self.job or '-'}: {self.message}",
                          *(_describe(r, self.origin_ms) for r in self.slice)])


@dataclass
class _Check:
    line: Timeline
    allow: Allowances
    found: list[Violation] = field(default_factory=list)

    def report(self, rule: str, job: str | None, message: str, shown: list[Record],
               lo: float, hi: float) -> None:
        """Add a violation: ``shown`` plus the faults active in ``[lo, hi]``."""
        seen: dict[int, Record] = {}
        for r in shown + self.line.active_faults(lo, hi):
            seen.setdefault(id(r), r)
        ordered = sorted(seen.values(), key=lambda r: (r.time_ms, r.process, r.seq))
        self.found.append(Violation(rule, job, message, ordered, self.line.origin_ms))

    def job_records(self, job: str) -> list[Record]:
        """Every record naming ``job``."""
        return list(self.line.by_job.get(job, []))


def _delivered_ms(run: Run) -> float:
    """A lower bound of the run's delivery: its entry's write time, else its start."""
    return run.delivered_ms


def _applied(op: Op) -> bool:
    return op.phase != "fail" and op.answer("applied") is not False and (
        op.kind != "reschedule" or op.answer("found") is not False)


def _due(op: Op) -> float:
    due = op.answer("due_ms")
    if isinstance(due, (int, float)):
        return float(due)
    at = op.invoke.fields.get("at_ms")  # an ``at=`` asked: that ms (floored) or later
    if isinstance(at, (int, float)):
        return float(math.floor(at))
    delay = op.invoke.fields.get("delay_ms")
    return op.invoke_ms + float(delay) if isinstance(delay, (int, float)) else -math.inf


def _lost(c: _Check) -> None:
    for job, ops in c.line.ops.items():
        for op in ops:
            if op.kind != "enqueue" or op.phase != "ok":
                continue
            ended = any(run.outcome in FINAL and run.end_ms >= op.invoke_ms
                        for run in c.line.runs.get(job, []))
            cancelled = any(o.kind == "cancel" and o.phase in ("ok", "unknown")
                            and (o.phase == "unknown" or bool(o.answer("cancelled")))
                            and o.done_ms >= op.invoke_ms for o in ops)
            present = any(n.kind == "final_state"
                          and str(n.fields.get("state")).lower() not in LOST_STATES
                          for n in c.line.notes.get(job, []))
            if not (ended or cancelled or present):
                at = op.done_ms - c.line.origin_ms
                c.report("lost", job, f"enqueue acknowledged at +{at:.0f} ms never ended, was not "
                         "cancelled and is not in the final state",
                         c.job_records(job), op.invoke_ms, c.line.horizon_ms)
                break


def _early(c: _Check) -> None:
    for job, runs in c.line.runs.items():
        setting = [o for o in c.line.ops.get(job, []) if o.kind in ("enqueue", "reschedule")]
        if not setting:
            continue  # not a producer's job (a callback): nothing to compare with
        live = [o for o in setting if _applied(o)]
        for run in runs:
            t, seen = run.start_ms, _delivered_ms(run)
            due_field = run.start.fields.get("due_ms")
            candidates = [o for o in live if o.invoke_ms <= t and not any(
                later.phase == "ok" and _applied(later) and later.invoke_ms > o.done_ms
                and later.done_ms <= seen for later in live)]
            first = min((o.invoke_ms for o in setting), default=t)
            if not candidates:
                c.report("unenqueued_run", job, "started with no enqueue that may have happened"
                         " before it", c.job_records(job), min(first, t), run.end_ms)
                break
            due = min(_due(o) for o in candidates)
            if isinstance(due_field, (int, float)):
                due = max(due, float(due_field))
                ready = run.start.fields.get("ready_ms")
                if isinstance(ready, (int, float)) and ready < due_field:
                    c.report("promoted_early", job, f"its stream entry was written "
                             f"{due_field - ready:.0f} ms before its due time (server clock)",
                             c.job_records(job), ready, run.end_ms)
                    break
            if t < due - GRANULARITY_MS:
                c.report("early", job, f"started {due - t:.1f} ms before its due time",
                         c.job_records(job), min(o.invoke_ms for o in candidates), run.end_ms)
                break


def _cut_off_long_enough(c: _Check, first: Run, second: Run) -> bool:
    bound = c.allow.overlap_allowed_when_cutoff_longer_than_ms
    if bound is not None and c.line.undone(first.delivered_ms, second.start_ms):
        return True  # a failover undid the first delivery (timeline.py: ``undoes``)
    if bound is None or first.process == second.process:
        return False
    if first.start.fields.get("pull"):  # nobody touches a reservation: silent past its ttr
        return second.start_ms - first.start_ms > c.allow.ttr_ms
    names = first.names()
    for fault in c.line.faults:
        if not fault.cuts_off or not names.intersection(fault.hit()):
            continue
        length = min(fault.end_ms, c.line.horizon_ms) - fault.begin_ms
        # from the delivery on: a worker frozen while its blocked read got the delivery
        # starts the handler after the freeze, its lease already gone (make nemesis found it)
        if fault.active(first.delivered_ms, second.start_ms) and length > bound:
            return True
    return False


def _overlap(c: _Check) -> None:
    for job, runs in c.line.runs.items():
        ordered = sorted(runs, key=lambda r: r.start_ms)
        for i, first in enumerate(ordered):
            clash = next((s for s in ordered[i + 1:] if s.start_ms < first.end_ms
                          and not _cut_off_long_enough(c, first, s)), None)
            if clash is None:
                continue
            open_note = "" if first.end else " (no end note: it ran on)"
            c.report("overlap", job, f"the run on {clash.worker} started "
                     f"{first.end_ms - clash.start_ms:.0f} ms before the run on "
                     f"{first.worker} ended{open_note}", c.job_records(job),
                     first.start_ms, min(max(first.end_ms, clash.end_ms), c.line.horizon_ms))
            break


def _cancel(c: _Check) -> None:
    for job, ops in c.line.ops.items():
        for cancel in ops:
            if cancel.kind != "cancel" or cancel.phase != "ok" or not cancel.answer("cancelled"):
                continue
            again = [o.invoke_ms for o in ops if o.kind == "enqueue" and o.phase != "fail"
                     and o.invoke_ms > cancel.invoke_ms]
            after = [run for run in c.line.runs.get(job, [])
                     if _delivered_ms(run) > cancel.done_ms
                     and not any(t <= run.start_ms for t in again)]
            if after:
                late = after[0].start_ms - cancel.done_ms
                c.report("run_after_cancel", job, f"started {late:.0f} ms after its cancel was "
                         "acknowledged", c.job_records(job),
                         cancel.invoke_ms, after[0].end_ms)
                break


def _results(c: _Check) -> None:
    for job, notes in c.line.notes.items():
        values = [run.end.fields.get("value") for run in c.line.runs.get(job, [])
                  if run.end is not None and run.outcome in SUCCESS]
        for note in notes:
            state = note.fields.get("state")
            kept = (note.kind == "result" and state in (None, "succeeded")) or (
                note.kind == "final_state" and state == "succeeded")
            if not kept or "value" not in note.fields:
                continue
            if note.fields["value"] not in values:
                c.report("phantom_result", job, f"result {note.fields['value']!r} is no run's "
                         f"value (runs returned {values!r})", c.job_records(job),
                         note.time_ms, note.time_ms)
                break


def _first_final_end(c: _Check, job: str, outcomes: frozenset[str]) -> float | None:
    ends = [run.end_ms for run in c.line.runs.get(job, []) if run.outcome in outcomes]
    return min(ends) if ends else None


def _callbacks(c: _Check, batches: dict[str, list[str]]) -> None:
    notes: dict[str, dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for records in c.line.notes.values():
        for note in records:
            if note.kind == "callback":
                batch = str(note.fields.get("batch", note.job))
                notes[batch][str(note.fields.get("which", note.job))].append(note)
    for batch in sorted(set(batches) | set(notes)):
        members = batches.get(batch, [])
        shown = [r for m in members for r in c.job_records(m)]
        if batch in batches and not notes.get(batch):
            c.report("callback", batch, "no callback of the batch ran", shown,
                     c.line.origin_ms, c.line.horizon_ms)
            continue
        ends = [_first_final_end(c, m, FINAL) for m in members]
        for which, seen in sorted(notes.get(batch, {}).items()):
            firsts = [n for n in seen if n.fields.get("attempt", 1) == 1]
            cb = [r for n in seen if n.job for r in c.job_records(n.job)]
            again = len(firsts) > 1 and c.line.undone(firsts[0].time_ms, firsts[-1].time_ms)
            if len(firsts) != 1 and not again:  # a failover may undo the first one's ack
                c.report("callback", batch, f"callback {which} ran {len(firsts)} times as a "
                         "first delivery (exactly once expected)", cb,
                         seen[0].time_ms, seen[-1].time_ms)
            elif ends and None not in ends:
                last = max(e for e in ends if e is not None)
                if seen[0].time_ms < last:
                    c.report("callback", batch, f"callback {which} ran "
                             f"{last - seen[0].time_ms:.0f} ms before the batch's last member"
                             " ended", cb + shown, seen[0].time_ms, last)


def _chains(c: _Check, chains: dict[str, list[str]]) -> None:
    for name, members in sorted(chains.items()):
        for before, after in itertools.pairwise(members):
            succeeded = _first_final_end(c, before, SUCCESS)
            starts = [run.start_ms for run in c.line.runs.get(after, [])]
            if not starts:
                continue
            if succeeded is None or min(starts) < succeeded - GRANULARITY_MS:
                why = ("never succeeded" if succeeded is None else
                       f"succeeded {succeeded - min(starts):.0f} ms after {after} started")
                c.report("chain", after, f"chain {name}: {before} {why}",
                         c.job_records(before) + c.job_records(after),
                         min(starts), succeeded if succeeded is not None else min(starts))
                break


def check(records: list[Record], allow: Allowances, *,
          chains: dict[str, list[str]] | None = None,
          batches: dict[str, list[str]] | None = None) -> list[Violation]:
    """Every violation of the rules (module docstring) in a history (``load``): ``chains``
    maps a chain's name to its jobs in order, ``batches`` a batch's id to its members."""
    c = _Check(timeline(records), allow)
    _lost(c)
    _early(c)
    _overlap(c)
    _cancel(c)
    _results(c)
    _callbacks(c, batches or {})
    _chains(c, chains or {})
    return c.found


def _describe(record: Record, origin: float) -> str:
    fields = dict(record.fields)
    if record.kind == "fault":
        what = f"FAULT {record.phase} {fields.pop('name', '?')} on {fields.pop('target', '?')}"
    else:
        what = " ".join(str(x) for x in (record.kind, record.phase, record.job) if x)
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(fields.items()))
    return f"  {(record.time_ms - origin) / 1000:+10.3f} s  {record.process:<20} {what}  {shown}"


def format_report(violations: list[Violation], limit: int | None = 50) -> str:
    """The violations as text: how many of each rule, then each one's rule, job and message
    and its slice of the history, times in seconds from the history's start (faults marked
    ``FAULT``); past ``limit`` violations only their count (None: all)."""
    if not violations:
        return "history checked: no violation"
    counts = Counter(v.rule for v in violations)
    out = [f"{len(violations)} violation(s): "
           + ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items()))]
    shown = violations if limit is None else violations[:limit]
    out.extend(f"\n{v}" for v in shown)
    if len(shown) < len(violations):
        out.append(f"\n... and {len(violations) - len(shown)} more (format_report(limit=None))")
    return "\n".join(out)


def as_dict(v: Violation) -> dict[str, Any]:
    """A violation as JSON-ready data (for a run's report file)."""
    return {"rule": v.rule, "job": v.job, "message": v.message,
            "slice": [{"process": r.process, "seq": r.seq, "kind": r.kind, "phase": r.phase,
                       "job": r.job, "time_ms": r.time_ms, "fields": r.fields}
                      for r in v.slice]}
