"""A history read as a timeline (docs/reliability.md#histories): the handlers' runs, the
nemesis's faults and the producers' operations, each with its interval on the run's one clock.
The checker's rules (checker.py) are written over these.

Faults: a ``fault`` note with ``phase="begin"`` and one with ``phase="end"`` (paired by the
``id`` field when given, else by the process, ``name`` and ``target``); ``target`` a name or a
list of names. A fault without an end lasts to the end of the history.

- A fault **kills** its target (``kills=True``, or a name containing ``kill``): the target's
  runs with no ``end`` note end at the fault's begin (the runs of the ``pid`` its begin note
  names, when it names one; a run noted between the begin note and the signal ends there too).
- A fault **undoes** recent writes of every worker (``undoes=True``, or a name containing
  ``failover``): a Sentinel failover (the primary killed -9) loses what had not reached the
  replica: deliveries, heartbeats, acks (docs/guarantees.md#durability-across-failover, "What
  a failover can do to a job"); such a fault excuses a second run of a job whose first run it
  overlapped, and a callback delivered again, whoever the workers were.
- A fault **cuts off** its target from Redis (``cuts_off=True``, or a name containing
  ``partition``, ``stop``, ``pause``, ``freeze``, ``isolate`` or ``link_down``; set
  ``cuts_off=True`` on a packet-loss fault that drops everything): only such a fault on a run's
  worker, longer than the allowed bound, excuses an overlap (checker.py).

A fault cuts off its targets and the names of its ``hosts`` field (a network fault of the
nemesis names there the hosts it cut: one, or all of them for its ``redis`` target).
A target names a run's worker when it equals the run's ``worker`` field, one of its
``:``-separated parts (``"w1"`` or the pid of ``"w1:4321"``), the recorder's process name or
one of its ``-``-separated parts (``"n0"`` of ``"worker-n0-4321"``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.system.nemesis.history import Record

SUCCESS = frozenset({"ok", "succeeded"})
FINAL = SUCCESS | {"dead"}
CUT_OFF_WORDS = ("cut", "partition", "stop", "pause", "freeze", "isolate", "link_down")


@dataclass
class Fault:
    """One fault of the nemesis, from its begin to its end (inf: never ended)."""

    name: str
    targets: tuple[str, ...]
    begin: Record
    end: Record | None
    kills: bool
    cuts_off: bool
    undoes: bool = False

    @property
    def begin_ms(self) -> float:
        """When it began."""
        return self.begin.time_ms

    @property
    def end_ms(self) -> float:
        """When it ended (inf when the history has no end for it)."""
        return math.inf if self.end is None else self.end.time_ms

    def active(self, lo: float, hi: float) -> bool:
        """Whether the fault overlaps the interval ``[lo, hi]``."""
        return self.begin_ms <= hi and self.end_ms >= lo

    def records(self) -> list[Record]:
        """Its begin and end records."""
        return [self.begin] if self.end is None else [self.begin, self.end]

    def hit(self) -> set[str]:
        """The names it hit: its targets and the ``hosts`` field of its notes (the nemesis
        names there every host a network fault cut off: a cut of the ``redis`` target cuts
        every host in a namespace)."""
        names = set(self.targets)
        for record in self.records():
            names.update(_targets(record.fields.get("hosts")))
        return names


@dataclass
class Run:
    """One run of a job's handler: its ``start`` note and its ``end`` note, or the kill of its
    worker, or (neither) open to the end of the history."""

    job: str
    worker: str
    process: str
    start: Record
    end: Record | None = None
    killed_by: Fault | None = None
    horizon_ms: float = math.inf

    @property
    def start_ms(self) -> float:
        """When the handler started."""
        return self.start.time_ms

    @property
    def delivered_ms(self) -> float:
        """A lower bound of when its delivery reached its worker: the ``ready_ms`` of its start
        note (when its stream entry was written), else its start. A worker frozen or cut off
        after that holds the delivery unstarted, its lease running (docs/guarantees.md)."""
        ready = self.start.fields.get("ready_ms")
        return float(ready) if isinstance(ready, (int, float)) else self.start_ms

    @property
    def end_ms(self) -> float:
        """When it ended: its end note, else its worker's kill, else the history's end."""
        if self.end is not None:
            return self.end.time_ms
        if self.killed_by is not None:
            return max(self.killed_by.begin_ms, self.start_ms)
        return self.horizon_ms

    @property
    def outcome(self) -> str | None:
        """The end note's ``outcome`` (None: no end note)."""
        return None if self.end is None else str(self.end.fields.get("outcome"))

    def names(self) -> set[str]:
        """The names a fault's target may give this run's worker."""
        return {self.worker, self.process, *self.worker.split(":"), *self.process.split("-")}

    def records(self) -> list[Record]:
        """Its start and end records (and the kill's begin)."""
        out = [self.start] if self.end is None else [self.start, self.end]
        return out + ([self.killed_by.begin] if self.killed_by is not None else [])


@dataclass
class Op:
    """One producer operation: its invoke and its completion (None: never completed, which
    counts as unknown)."""

    invoke: Record
    completion: Record | None

    @property
    def kind(self) -> str:
        """``enqueue``, ``cancel``, ..."""
        return self.invoke.kind

    @property
    def phase(self) -> str:
        """``ok``, ``fail`` or ``unknown``."""
        return "unknown" if self.completion is None else str(self.completion.phase)

    @property
    def invoke_ms(self) -> float:
        """When it was invoked."""
        return self.invoke.time_ms

    @property
    def done_ms(self) -> float:
        """When it completed (inf when unknown: it may take effect any time later)."""
        if self.completion is None or self.phase == "unknown":
            return math.inf
        return self.completion.time_ms

    def answer(self, key: str, default: Any = None) -> Any:
        """A field of its ok completion, else of its invoke."""
        if self.completion is not None and key in self.completion.fields:
            return self.completion.fields[key]
        return self.invoke.fields.get(key, default)

    def records(self) -> list[Record]:
        """Its invoke and its completion."""
        return [self.invoke] if self.completion is None else [self.invoke, self.completion]


@dataclass
class Timeline:
    """The history sorted out: runs, ops and notes per job, faults, the history's span."""

    runs: dict[str, list[Run]] = field(default_factory=lambda: defaultdict(list))
    ops: dict[str, list[Op]] = field(default_factory=lambda: defaultdict(list))
    notes: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    by_job: dict[str, list[Record]] = field(default_factory=lambda: defaultdict(list))
    faults: list[Fault] = field(default_factory=list)
    origin_ms: float = 0.0
    horizon_ms: float = 0.0

    def undone(self, lo: float, hi: float) -> bool:
        """Whether a fault that undoes writes (a failover) was active in ``[lo, hi]``."""
        return any(f.undoes and f.active(lo, hi) for f in self.faults)

    def active_faults(self, lo: float, hi: float) -> list[Record]:
        """The records of the faults active at some time in ``[lo, hi]``."""
        return [r for f in self.faults if f.active(lo, hi) for r in f.records()]


def _targets(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return (str(value),)


def _fault(begin: Record, end: Record | None) -> Fault:
    name = str(begin.fields.get("name", ""))
    kills = begin.fields.get("kills")
    cuts = begin.fields.get("cuts_off")
    undoes = begin.fields.get("undoes")
    return Fault(name=name, targets=_targets(begin.fields.get("target")), begin=begin, end=end,
                 kills=("kill" in name.lower()) if kills is None else bool(kills),
                 cuts_off=(any(w in name.lower() for w in CUT_OFF_WORDS)
                           if cuts is None else bool(cuts)),
                 undoes=("failover" in name.lower()) if undoes is None else bool(undoes))


def faults_of(records: Iterable[Record]) -> list[Fault]:
    """Pair the fault notes' begins and ends (in time order)."""
    opened: dict[tuple[Any, ...], list[Fault]] = defaultdict(list)
    faults: list[Fault] = []
    for r in records:
        if r.kind != "fault":
            continue
        key: tuple[Any, ...] = ((r.fields["id"],) if "id" in r.fields else
                                (r.process, r.fields.get("name"),
                                 _targets(r.fields.get("target"))))
        if r.phase != "end":
            faults.append(_fault(r, None))
            opened[key].append(faults[-1])
        elif opened[key]:
            opened[key].pop(0).end = r
    return faults


def _runs_of(records: list[Record], faults: list[Fault], horizon: float) -> list[Run]:
    """Pair each process's start and end notes per job (an end closes the open run of its
    attempt, else the oldest open one); a run left open ends at its worker's next kill."""
    open_runs: dict[tuple[str, str], list[Run]] = defaultdict(list)
    runs: list[Run] = []
    for r in records:
        if r.job is None or r.kind not in ("start", "end"):
            continue
        key = (r.process, r.job)
        if r.kind == "start":
            run = Run(job=r.job, worker=str(r.fields.get("worker", r.process)),
                      process=r.process, start=r, horizon_ms=horizon)
            open_runs[key].append(run)
            runs.append(run)
            continue
        candidates = open_runs[key]
        if not candidates:
            continue  # an end without its start: nothing to pair
        same = [c for c in candidates if c.start.fields.get("attempt") == r.fields.get("attempt")]
        run = (same or candidates)[0]
        candidates.remove(run)
        run.end = r
    kills = sorted((f for f in faults if f.kills), key=lambda f: f.begin_ms)
    for run in runs:
        if run.end is None:
            run.killed_by = next((f for f in kills if _kills(f, run)), None)
    return runs


def _kills(fault: Fault, run: Run) -> bool:
    """Whether ``fault`` (a kill) ended ``run``: it names the run's worker and, when its begin
    note gives the ``pid`` it hit, that pid is the run's process; it had not ended before the
    run began (the process may note a start between the kill's begin note and the signal)."""
    names = run.names()
    pid = fault.begin.fields.get("pid")
    return (fault.end_ms >= run.start_ms and bool(names.intersection(fault.targets))
            and (pid is None or str(pid) in names))


def timeline(records: list[Record]) -> Timeline:
    """Sort a loaded history (``load``) into runs, operations, notes and faults."""
    ordered = sorted(records, key=lambda r: (r.time_ms, r.process, r.seq,
                                             0 if r.phase == "invoke" else 1))
    line = Timeline()
    if ordered:
        line.origin_ms = ordered[0].time_ms
        line.horizon_ms = ordered[-1].time_ms
    line.faults = faults_of(ordered)
    for run in _runs_of(ordered, line.faults, line.horizon_ms):
        line.runs[run.job].append(run)
    invokes: dict[tuple[str, int], Op] = {}
    for r in ordered:
        if r.job is not None:
            line.by_job[r.job].append(r)
        if r.phase == "invoke":
            op = Op(invoke=r, completion=None)
            invokes[(r.process, r.seq)] = op
            if r.job is not None:
                line.ops[r.job].append(op)
        elif r.phase in ("ok", "fail", "unknown") and (r.process, r.seq) in invokes:
            invokes[(r.process, r.seq)].completion = r
        elif r.kind not in ("start", "end", "fault") and r.job is not None:
            line.notes[r.job].append(r)
    return line
