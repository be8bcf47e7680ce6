"""The key-limit rule of the nemesis run (docs/reliability.md#make-nemesis): the ``keyed``
workload's topic holds each fairness key to one running job (``key_concurrency=1``,
docs/limits.md#key-limits), so no two runs of jobs of one key may overlap in time.

A run's interval is its ``start`` note to its ``end`` note (the lease is taken before the first
and freed by the ack after the second, so the interval lies inside the lease), or to its
worker's kill. The docs let a lease go one ttr after its worker was last heard from: an overlap
is excused when a fault on one of the two runs' workers (a SIGSTOP, a cut, a degraded link) was
active while they overlapped; never otherwise. Violations are the checker's
(``tests/system/nemesis/checker.py``): ``format_report`` prints them with their slice.
"""

from __future__ import annotations

import re
from collections import defaultdict

from tests.system.nemesis.history import Record, Violation
from tests.system.nemesis.timeline import Run, Timeline, timeline

TOPIC = "keyed"
KEY = re.compile(r"^\{([^}]*)\}")


def _key(run: Run) -> str | None:
    if run.start.fields.get("topic") != TOPIC:
        return None
    found = KEY.match(run.job)
    return found.group(1) if found else None


def _excused(line: Timeline, a: Run, b: Run, lo: float, hi: float) -> bool:
    names = a.names() | b.names()
    if line.undone(lo, hi):  # a failover can undo a lease (docs/guarantees.md)
        return True
    return any(f.active(lo, hi) and names.intersection(f.targets) and not f.kills
               for f in line.faults)


def check_key_limits(records: list[Record], limit: int = 1) -> list[Violation]:
    """Every key whose runs overlapped more than ``limit`` at once (``limit`` 1: any two),
    with no fault on their workers to excuse it; one violation per key."""
    line = timeline(records)
    by_key: dict[str, list[Run]] = defaultdict(list)
    for runs in line.runs.values():
        for run in runs:
            key = _key(run)
            if key is not None:
                by_key[key].append(run)
    found: list[Violation] = []
    for key, runs in sorted(by_key.items()):
        runs.sort(key=lambda r: r.start_ms)
        open_runs: list[Run] = []
        for run in runs:
            open_runs = [r for r in open_runs if r.end_ms > run.start_ms]
            clashing = [r for r in open_runs if r.job != run.job
                        and not _excused(line, r, run, min(r.delivered_ms, run.delivered_ms),
                                         min(r.end_ms, run.end_ms))]
            if len(clashing) >= limit:
                other = clashing[0]
                shown = sorted([*other.records(), *run.records(),
                                *line.active_faults(other.start_ms, run.end_ms)],
                               key=lambda r: (r.time_ms, r.process, r.seq))
                found.append(Violation(
                    "key_limit", key, f"{run.job} started on {run.worker} while {other.job} "
                    f"of the same key ran on {other.worker} (key_concurrency={limit})",
                    shown, line.origin_ms))
                break
            open_runs.append(run)
    return found
