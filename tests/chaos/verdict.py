"""The chaos checker: from what producers were told and what handlers recorded, count lost,
duplicated (with the fault that explains each) and early deliveries, and lateness."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

TTR_MS = 3000


@dataclass
class Verdict:
    """The outcome of one chaos run; ``ok`` needs no lost and no early delivery."""

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
    faults: list[dict[str, object]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No job lost, none delivered early."""
        return self.lost == 0 and self.early == 0


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / max of ``values`` (zeros when empty)."""
    if not values:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "count": 0}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": pick(0.50), "p99": pick(0.99), "max": round(ordered[-1], 2),
            "count": len(ordered)}


def explain(first: float, second: float, faults: Sequence[dict[str, object]]) -> str:
    """The fault that explains a second run: the last one between the first run and the second
    (or up to a ttr before the first, for a connection or process lost mid-run)."""
    window = [f for f in faults
              if first - TTR_MS <= float(f["at"]) <= second]  # type: ignore[arg-type]
    return str(window[-1]["kind"]) if window else "unexplained"


def judge(acknowledged: dict[str, int], runs: Sequence[dict[str, float | str | int]],
          faults: Sequence[dict[str, object]], refused: int) -> Verdict:
    """Check the history against the acknowledged enqueues."""
    starts: dict[str, list[float]] = {}
    for run in runs:
        starts.setdefault(str(run["id"]), []).append(float(run["start"]))
    lost_ids = sorted(set(acknowledged) - set(starts))
    causes: Counter[str] = Counter()
    early = 0
    lateness: list[float] = []
    during: list[float] = []
    for job_id, job_starts in starts.items():
        job_starts.sort()
        due = acknowledged.get(job_id)
        if due is None:
            continue
        early += sum(1 for s in job_starts if s + 1 < due)  # 1 ms: float rounding of ms clocks
        late = job_starts[0] - due
        lateness.append(late)
        if any(float(f["at"]) - 1000 <= due <= float(f["end"]) + 1000  # type: ignore[arg-type]
               for f in faults):
            during.append(late)
        for earlier, later in itertools.pairwise(job_starts):
            causes[explain(earlier, later, faults)] += 1
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
        faults=list(faults),
    )
