"""The chaos checker: from what producers were told and what handlers recorded, count lost,
duplicated (with the fault that explains each), early and corrupted deliveries, and lateness."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

TTR_MS = 3000


@dataclass
class Verdict:
    """The outcome of one chaos run; ``ok`` needs no lost job, no early delivery, no refused
    enqueue (producers retry for 60 s: a refusal means an outage was not ridden out) other than
    those Redis refused for memory during a maxmemory squeeze, no body that arrived altered, no
    key of a partition left on two cluster nodes, and no duplicate without a fault to explain it.
    """

    enqueued_acknowledged: int
    enqueue_refused: int
    handled_at_least_once: int
    lost: int
    lost_ids: list[str]
    duplicates: int
    duplicate_causes: dict[str, int]
    early: int
    lateness_ms: dict[str, float]
    lateness_during_faults_ms: dict[str, float]
    lateness_outside_faults_ms: dict[str, float] = field(default_factory=dict)
    lateness_by_fault_kind_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    faults_by_kind: dict[str, int] = field(default_factory=dict)
    faults_not_injected: int = 0
    enqueue_refused_oom: int = 0
    handled_not_acknowledged: int = 0
    big_bodies: dict[str, int] = field(default_factory=dict)
    corrupt: int = 0
    corrupt_ids: list[str] = field(default_factory=list)
    split_keys: list[str] = field(default_factory=list)
    lost_where: dict[str, str] = field(default_factory=dict)
    lost_states: dict[str, int] = field(default_factory=dict)
    setup: dict[str, object] = field(default_factory=dict)
    faults: list[dict[str, object]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing lost, early, refused (but for memory), altered or split; every duplicate
        explained."""
        return (self.lost == 0 and self.early == 0 and self.enqueue_refused == 0
                and self.corrupt == 0 and not self.split_keys
                and "unexplained" not in self.duplicate_causes)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / max of ``values`` (zeros when empty)."""
    if not values:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": pick(0.50), "p99": pick(0.99), "max": round(ordered[-1], 2),
            "count": len(ordered)}


def explain(first: tuple[float, int], second: tuple[float, int],
            faults: Sequence[dict[str, object]]) -> str:
    """The fault that explains a second run of a job, given (start ms, pid) of two runs.

    A worker kill explains it when it killed the process of the first run after that run
    started: before the kill ended (``end``, once the process is gone), as a run can start in
    the few ms between the controller noting ``at`` and the SIGKILL landing. Else a fault on
    Redis or the connections (kill, CLIENT KILL, PAUSE, DEBUG SLEEP) between a ttr before the
    first run and the second run, the last such one (an ack or heartbeat lost). A dispatcher
    kill never explains one: a dispatcher holds no jobs.
    """
    (first_start, first_pid), (second_start, _) = first, second
    for fault in faults:
        if (fault["kind"] == "kill_worker"
                and str(fault["detail"]) == f"worker pid {first_pid}"
                and first_start <= float(fault["end"])  # type: ignore[arg-type]
                and float(fault["at"]) <= second_start):  # type: ignore[arg-type]
            return "kill_worker"
    window = [f for f in faults if f["kind"] not in ("kill_worker", "kill_dispatcher")
              and first_start - TTR_MS <= float(f["at"]) <= second_start]  # type: ignore[arg-type]
    return str(window[-1]["kind"]) if window else "unexplained"


def near_fault(due: float, fault: dict[str, object]) -> bool:
    """A job counts as due during a fault from 1 s before it starts to 1 s after it ends."""
    return float(fault["at"]) - 1000 <= due <= float(fault["end"]) + 1000  # type: ignore[arg-type]


Run = dict[str, float | str | int]
# (first run, second run, injected faults) -> the cause of the second run, or "unexplained"
Explainer = Callable[[Run, Run, Sequence[dict[str, object]]], str]


def _by_pid(first: Run, second: Run, faults: Sequence[dict[str, object]]) -> str:
    return explain((float(first["start"]), int(first["pid"])),
                   (float(second["start"]), int(second["pid"])), faults)


def judge(acknowledged: dict[str, int], runs: Sequence[Run],
          faults: Sequence[dict[str, object]], refused: int, *, refused_oom: int = 0,
          big: Sequence[str] = (), explainer: Explainer = _by_pid) -> Verdict:
    """Check the history against the acknowledged enqueues.

    ``refused`` counts enqueues refused for any reason but memory, ``refused_oom`` those Redis
    refused with ``OOM`` (a squeeze: not a promise, not a failure); ``big`` names the
    acknowledged jobs with 64 KiB-1 MiB bodies. A run recorded with ``"intact": false`` got a
    body that does not match what was enqueued (its number or its SHA-256). ``explainer``
    names the cause of each second run (default: ``explain``, by process and fault window).
    """
    starts: dict[str, list[Run]] = {}
    corrupt_ids: set[str] = set()
    for run in runs:
        starts.setdefault(str(run["id"]), []).append(run)
        if not run.get("intact", True):
            corrupt_ids.add(str(run["id"]))
    big_acknowledged = set(big) & set(acknowledged)
    lost_ids = sorted(set(acknowledged) - set(starts))
    injected = [f for f in faults if not str(f["detail"]).startswith("not injected")]
    causes: Counter[str] = Counter()
    early = 0
    lateness: list[float] = []
    during: list[float] = []
    outside: list[float] = []
    by_kind: dict[str, list[float]] = {}
    for job_id, job_runs in starts.items():
        job_runs.sort(key=lambda run: float(run["start"]))
        due = acknowledged.get(job_id)
        if due is None:
            continue
        # 1 ms: rounding of ms clocks
        early += sum(1 for run in job_runs if float(run["start"]) + 1 < due)
        late = float(job_runs[0]["start"]) - due
        lateness.append(late)
        near = {str(f["kind"]) for f in injected if near_fault(due, f)}
        (during if near else outside).append(late)
        for kind in near:
            by_kind.setdefault(kind, []).append(late)
        for earlier, later in itertools.pairwise(job_runs):
            causes[explainer(earlier, later, injected)] += 1
    return Verdict(
        enqueued_acknowledged=len(acknowledged),
        enqueue_refused=refused,
        handled_at_least_once=len(set(acknowledged) & set(starts)),
        lost=len(lost_ids),
        lost_ids=lost_ids[:20],
        duplicates=sum(causes.values()),
        duplicate_causes=dict(causes),
        early=early,
        lateness_ms=percentiles(lateness),
        lateness_during_faults_ms=percentiles(during),
        lateness_outside_faults_ms=percentiles(outside),
        lateness_by_fault_kind_ms={kind: percentiles(v) for kind, v in sorted(by_kind.items())},
        faults_by_kind=dict(Counter(str(f["kind"]) for f in injected)),
        faults_not_injected=len(faults) - len(injected),
        enqueue_refused_oom=refused_oom,
        handled_not_acknowledged=len(set(starts) - set(acknowledged)),
        big_bodies={"acknowledged": len(big_acknowledged),
                    "handled": len(big_acknowledged & set(starts))},
        corrupt=len(corrupt_ids),
        corrupt_ids=sorted(corrupt_ids)[:20],
        faults=list(faults),
    )
