"""The workflow chaos checker (docs/reliability.md#workflows): from the handlers' history
(``tests/system/chaos/flow_app.py``), the faults injected and what Redis holds after the run.

How a callback **enqueued twice** is told from a callback **run twice**: a callback is a job
with a derived id (``<batch>@1``, ``<batch>@2``). Every run of it records the job's ``created``
time (set once, by the script that writes it) and its ``attempt``. A redelivery after a worker
kill is the same job: same ``created``, a higher attempt; a second enqueue would be a new job
under the same id, with another ``created``. So ``callback_enqueues`` counts the distinct
``created`` values per callback (must be exactly 1), and repeated runs of one enqueue are
at-least-once re-runs, counted with every other job's in ``reruns`` and each explained by a
fault (``verdict.explain``: the kill of the process that ran it first, or the Redis restart
within a ttr before it), or by the first run's own failure (its handler recorded ``error``: it
could not read the server clock while Redis was down; a failed run is retried by design).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.system.chaos.verdict import explain

Run = dict[str, Any]


@dataclass
class Plan:
    """The ids of one run: batch id -> member ids, and the chains in order."""

    batches: dict[str, list[str]]
    chains: list[list[str]]


@dataclass
class FlowVerdict:
    """The outcome of one workflow chaos run; see ``ok``."""

    jobs_acknowledged: int = 0
    callbacks_expected: int = 0
    lost: int = 0
    lost_ids: list[str] = field(default_factory=list)
    callback_enqueues: dict[str, int] = field(default_factory=dict)  # count of callbacks by it
    callbacks_enqueued_twice: list[str] = field(default_factory=list)
    callbacks_without_run: list[str] = field(default_factory=list)
    reruns: int = 0
    rerun_causes: dict[str, int] = field(default_factory=dict)
    callback_reruns: dict[str, int] = field(default_factory=dict)
    order_checked: int = 0
    order_violations: list[str] = field(default_factory=list)
    batches_wrong: list[str] = field(default_factory=list)
    left_over: dict[str, int] = field(default_factory=dict)
    faults_by_kind: dict[str, int] = field(default_factory=dict)
    enqueue_refused: list[str] = field(default_factory=list)
    setup: dict[str, object] = field(default_factory=dict)
    faults: list[dict[str, object]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing lost; every callback enqueued exactly once and run; no child started before
        all its parents ended; every batch done with every member succeeded; no outbox entry,
        waiting job or dead letter left; every re-run explained by a fault; nothing refused."""
        return (self.lost == 0 and not self.callbacks_enqueued_twice
                and not self.callbacks_without_run and not self.order_violations
                and not self.batches_wrong and not any(self.left_over.values())
                and "unexplained" not in self.rerun_causes and not self.enqueue_refused)


def read_runs(history: Path) -> list[Run]:
    """Every recorded start and end of every worker process (a line cut by kill -9 skipped)."""
    runs: list[Run] = []
    for path in sorted(history.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.endswith("}"):
                runs.append(json.loads(line))
    return runs


def settle_state(url: str, queue_name: str, partitions: int, plan: Plan,
                 acknowledged: set[str]) -> dict[str, Any]:
    """What Redis holds after the run: each acknowledged batch's info, and per partition the
    outbox length, jobs waiting and dead letters of the topic."""
    queue = sd.Queue(queue_name, url=url, partitions=partitions)
    try:
        infos = {b: queue.batch_info(b) for b in plan.batches if b in acknowledged}
        left: Counter[str] = Counter()
        for p in range(partitions):
            prefix = PartitionKeys(queue_name, p).prefix
            left["outbox entries"] += int(queue.client.xlen(prefix + "outbox"))
            waiting = queue.client.hvals(prefix + "waiting")
            left["jobs waiting"] += sum(int(v) for v in waiting)
        left["dead letters"] = sum(1 for _ in queue.dead_list("flow"))
        return {"batches": infos, "left": dict(left)}
    finally:
        queue.close()


def _ends(runs: list[Run]) -> dict[str, list[int]]:
    ends: dict[str, list[int]] = {}
    for run in runs:
        if run["ev"] == "end":
            ends.setdefault(str(run["id"]), []).append(int(run["us"]))
    return ends


def judge_flow(plan: Plan, acknowledged: set[str], runs: list[Run],
               faults: list[dict[str, object]], state: dict[str, Any]) -> FlowVerdict:
    """Check the history against the plan (see the module docstring and ``FlowVerdict.ok``)."""
    v = FlowVerdict(faults=faults)
    v.faults_by_kind = dict(Counter(str(f["kind"]) for f in faults))
    batches = [b for b in plan.batches if b in acknowledged]
    callbacks = [f"{b}@{n}" for b in batches for n in (1, 2)]
    jobs = sorted((acknowledged - set(plan.batches)) | set(callbacks))
    v.jobs_acknowledged, v.callbacks_expected = len(jobs) - len(callbacks), len(callbacks)
    starts: dict[str, list[Run]] = {}
    for run in runs:
        if run["ev"] == "start":
            starts.setdefault(str(run["id"]), []).append(run)
    ends = _ends(runs)
    lost = [j for j in jobs if j not in ends]
    v.lost, v.lost_ids = len(lost), lost[:20]
    failed = {(str(r["id"]), int(r["attempt"]), int(r["pid"])) for r in runs
              if r["ev"] == "error"}
    causes: Counter[str] = Counter()
    for job, job_runs in starts.items():
        job_runs.sort(key=lambda r: int(r["us"]))
        for first, second in itertools.pairwise(job_runs):
            if (job, int(first["attempt"]), int(first["pid"])) in failed:
                cause = "handler failed (no Redis clock)"  # a retry, at-least-once
            else:
                cause = explain((int(first["us"]) / 1000, int(first["pid"])),
                                (int(second["us"]) / 1000, int(second["pid"])), faults)
            causes[cause] += 1
            if "@" in job:
                v.callback_reruns[job] = v.callback_reruns.get(job, 0) + 1
    v.reruns, v.rerun_causes = sum(causes.values()), dict(causes)
    enqueues: Counter[int] = Counter()
    for cb in callbacks:
        created = {int(r["created"]) for r in starts.get(cb, [])}
        enqueues[len(created)] += 1
        if len(created) > 1:
            v.callbacks_enqueued_twice.append(cb)
        if cb not in ends:
            v.callbacks_without_run.append(cb)
    v.callback_enqueues = {str(k): n for k, n in sorted(enqueues.items())}
    _check_order(v, plan, batches, acknowledged, starts, ends)
    for b in batches:
        info = state["batches"].get(b)
        total = len(plan.batches[b])
        if info is None or (info.total, info.succeeded, info.dead, info.state) != (
                total, total, 0, "done"):
            v.batches_wrong.append(f"{b}: {info}")
    v.left_over = dict(state["left"])
    return v


def _check_order(v: FlowVerdict, plan: Plan, batches: list[str], acknowledged: set[str],
                 starts: dict[str, list[Run]], ends: dict[str, list[int]]) -> None:
    """Every child's first start after the last recorded end of each of its parents (a parent
    is acknowledged only after its handler's last end; server clock, µs)."""
    pairs: list[tuple[str, list[str]]] = []
    for chain in plan.chains:
        if set(chain) <= acknowledged:
            pairs += [(child, [parent]) for parent, child in itertools.pairwise(chain)]
    for b in batches:
        pairs += [(f"{b}@{n}", plan.batches[b]) for n in (1, 2)]
    for child, parents in pairs:
        if child not in starts:
            continue
        v.order_checked += 1
        first = min(int(r["us"]) for r in starts[child])
        for parent in parents:
            if parent not in ends or max(ends[parent]) >= first:
                v.order_violations.append(f"{child} started before {parent} ended")
                break
    v.order_violations = v.order_violations[:20]
