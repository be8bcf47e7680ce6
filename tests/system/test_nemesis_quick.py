"""The nemesis run in small (docs/reliability.md#make-nemesis): every workload against real
worker, dispatcher, ``serve`` and producer processes while processes are killed or stopped (a
producer too), redis-server is killed and restarted from its append-only file and a worker, a
producer and ``serve`` in network namespaces are cut off; the checker must find nothing, over a
history that holds every workload's operations and the faults. And the checker can fail: a
worker that runs jobs before they are due is caught (broken builds: test_nemesis_broken.py).

The network fault needs root (ip netns, tc); it is required, not skipped (a skip fails the
run: tests/support/no_skips.py).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.system.nemesis.faults import Fault
from tests.system.nemesis.history import load
from tests.system.nemesis.run import Settings, run
from tests.system.nemesis.workloads import WORKLOADS

pytestmark = pytest.mark.timeout(300)

# the topics each workload's jobs run under (the batches' callbacks run under "callback")
TOPICS = {"plain": "plain", "retry": "retry", "keyed": "keyed", "prio": "prio",
          "dense": "dense", "flows": "flow", "http": "http", "results": "result"}


def test_a_short_nemesis_run_checks_clean_over_every_workload(tmp_path: Path) -> None:
    # producers and serve in namespaces of their own: cut off and stopped like the workers
    # (serve's cut before its kill: a restarted serve may take seconds to answer again)
    plan = [Fault(2.0, "stop", "p-plain", 1.0), Fault(3.0, "kill", "w1", 0.5),
            Fault(4.0, "cut_loud", "serve", 1.0), Fault(5.0, "redis_restart", "redis", 1.0),
            Fault(7.0, "cut_loud", "p-results", 1.0), Fault(8.0, "stop", "d0", 1.0),
            Fault(9.0, "kill", "serve", 0.3), Fault(11.0, "cut_silent", "n0", 1.0)]
    settings = Settings(seed=7, duration=16.0, workloads=list(WORKLOADS), faults=[],
                        out=tmp_path, quick=True, plan=plan)
    violations, figures = run(settings)
    assert figures["settled"], figures
    assert not figures["producers_failed"], figures
    assert violations == [], [str(v) for v in violations]
    records = load(tmp_path / "history")
    ok_topics = Counter(r.fields.get("topic") for r in records
                        if r.kind == "enqueue" and r.phase == "invoke")
    ran_topics = Counter(r.fields.get("topic") for r in records if r.kind == "start")
    for workload, topic in TOPICS.items():
        assert ok_topics[topic] >= 5, (workload, ok_topics)
        assert ran_topics[topic] >= 5, (workload, ran_topics)
    assert figures["callbacks"], figures  # batches fired their callbacks
    assert figures["results_awaited"], figures
    assert figures["priority_pairs"], figures  # the priority rule had pairs to judge
    via_http = [r for r in records if r.kind == "result" and r.fields.get("via") == "http"]
    assert len(via_http) >= 5, len(via_http)  # results awaited over HTTP through serve
    assert any(r.kind == "cancel" for r in records) and any(r.kind == "reschedule"
                                                            for r in records)
    began = Counter(r.fields["name"] for r in records if r.kind == "fault"
                    and r.phase == "begin")
    assert began == Counter(f.name for f in plan), began
    ended = [r for r in records if r.kind == "fault" and r.phase == "end"]
    assert len(ended) == len(plan)
    assert not any(str(r.fields.get("detail", "")).startswith("failed") for r in ended), ended


def test_a_worker_that_runs_jobs_before_they_are_due_is_caught(tmp_path: Path) -> None:
    settings = Settings(seed=3, duration=6.0, workloads=["plain"], faults=[], out=tmp_path,
                        quick=True, rogue=True, plan=[])
    violations, figures = run(settings)
    assert violations, figures
    early = [v for v in violations if v.rule == "early"]
    assert early, [str(v) for v in violations]
