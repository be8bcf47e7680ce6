"""The priority rule of the nemesis run (docs/reliability.md#make-nemesis): among the jobs of the
``prio`` topic (priorities, no fairness key: one lane per partition, docs/priorities.md#how-it-
decides) that waited in their lane together, a higher priority is not taken after a lower one.

Evidence, all on the server clock and exact: each job's enqueue answer (its ``due_ms``), its
``priority`` (the invoke), and the stream entry id its first run was delivered from (the
``entry`` field of the ``start`` note): ``takeStaged`` writes the entries of a take in rank
order, so entry ids order the takes. A pair is judged only when the docs fix its order:

- both jobs in one partition (lanes are per partition), each run first as attempt 1 from a lane
  (a retry or a reclaimed job comes back through the stream, read before the lanes);
- ``A`` ranks first: ``rank = due - priority x aging`` lower, which holds when ``A``'s priority
  is higher and its due time no later, or its priority equal and its due time earlier;
- ``A`` was surely in its lane when ``B`` was taken: its enqueue was answered before ``B`` was
  due, and ``promoteDue`` moves due jobs earliest first, ties by id (``ZRANGEBYSCORE`` order),
  so ``A``, due no later (and, on a tie, of a smaller id), was promoted no later than ``B``;
- no failover meanwhile (it can undo a promotion or a take:
  docs/guarantees.md#durability-across-failover).

A violation: ``B``'s entry id is smaller than ``A``'s (``B`` was taken first). One per job B.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamdelay.protocol.keys import partition_of
from tests.system.nemesis.history import Record, Violation
from tests.system.nemesis.timeline import Run, Timeline, timeline

TOPIC = "prio"


@dataclass(frozen=True)
class _Job:
    job: str
    partition: int
    due: float
    priority: int
    acked: float
    run: Run

    @property
    def entry(self) -> tuple[int, int]:
        ms, _, seq = str(self.run.start.fields["entry"]).partition("-")
        return int(ms), int(seq or 0)


def _ranks_first(a: _Job, b: _Job) -> bool:
    """``a`` ranks before ``b`` and was promoted no later (module docstring)."""
    if a.priority > b.priority:
        return (a.due, a.job) < (b.due, b.job)
    return a.priority == b.priority and a.due < b.due


def _jobs(line: Timeline, partitions: int) -> list[_Job]:
    found = []
    for job, ops in line.ops.items():
        enqueues = [o for o in ops if o.kind == "enqueue"]
        if len(enqueues) != 1 or enqueues[0].invoke.fields.get("topic") != TOPIC:
            continue
        op = enqueues[0]
        due = op.answer("due_ms")
        if op.phase != "ok" or not op.answer("created") or not isinstance(due, (int, float)):
            continue
        runs = sorted(line.runs.get(job, []), key=lambda r: r.start_ms)
        if not runs or runs[0].start.fields.get("attempt") != 1 or "entry" not in \
                runs[0].start.fields:
            continue
        found.append(_Job(job, partition_of(job, partitions), float(due),
                          int(op.invoke.fields.get("priority", 5)), op.done_ms, runs[0]))
    return found


def judged_pairs(records: list[Record], partitions: int) -> int:
    """How many ordered pairs the rule judged (the report's figure: the rule had work)."""
    jobs = _jobs(timeline(records), partitions)
    return sum(1 for a in jobs for b in jobs if a is not b and a.partition == b.partition
               and _ranks_first(a, b) and a.acked < b.due)


def check_priorities(records: list[Record], partitions: int) -> list[Violation]:
    """Every job of the ``prio`` topic taken before one that ranked ahead of it in its lane
    (module docstring); one violation per job taken too early."""
    line = timeline(records)
    jobs = _jobs(line, partitions)
    found: list[Violation] = []
    for b in jobs:
        for a in jobs:
            if a is b or a.partition != b.partition or not _ranks_first(a, b):
                continue
            if a.acked >= b.due or b.entry >= a.entry:
                continue
            lo, hi = min(a.acked, b.run.start_ms), max(a.run.start_ms, b.run.start_ms)
            if line.undone(lo, hi):
                continue
            shown = sorted([*line.by_job[a.job], *line.by_job[b.job],
                            *line.active_faults(lo, hi)],
                           key=lambda r: (r.time_ms, r.process, r.seq))
            found.append(Violation(
                "priority", b.job, f"taken (entry {b.run.start.fields['entry']}, priority "
                f"{b.priority}) before {a.job} (entry {a.run.start.fields['entry']}, priority "
                f"{a.priority}, due {b.due - a.due:.0f} ms earlier) of the same lane",
                shown, line.origin_ms))
            break
    return found
