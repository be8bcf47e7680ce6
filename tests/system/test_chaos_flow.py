"""The short workflow chaos run (the long one is `make chaos-flow`, docs/reliability.md#workflows):
batches with callbacks and chains across 4 partitions, `streamdelay worker` processes killed
with kill -9, redis-server killed and restarted from its AOF; and the checker's own rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.system.chaos.flow_run import FlowSettings, run_flow_chaos
from tests.system.chaos.flow_verdict import Plan, judge_flow

pytestmark = pytest.mark.timeout(120)


def test_short_workflow_chaos_run(tmp_path: Path) -> None:
    settings = FlowSettings(batches=4, batch_size=50, chains=10, chain_length=10, spread=12.0,
                            kill_interval=2.5, out=tmp_path, drain_timeout=60.0)
    verdict = run_flow_chaos(settings)
    assert verdict.faults_by_kind.get("kill_redis") == 1, verdict.faults_by_kind
    assert verdict.faults_by_kind.get("kill_worker", 0) >= 1, verdict.faults_by_kind
    assert verdict.jobs_acknowledged == 300 and verdict.callbacks_expected == 8
    assert verdict.lost == 0, verdict.lost_ids
    assert verdict.callback_enqueues == {"1": 8}, verdict.callbacks_enqueued_twice
    assert not verdict.order_violations and verdict.order_checked == 4 * 2 + 10 * 9
    assert verdict.ok, (verdict.batches_wrong, verdict.left_over, verdict.rerun_causes)
    assert (tmp_path / "verdict.json").exists()


def run(ev: str, job: str, us: int, pid: int = 7, created: int = 1, attempt: int = 1
        ) -> dict[str, object]:
    """One history line."""
    return {"ev": ev, "id": job, "us": us, "pid": pid, "created": created, "attempt": attempt}


def test_the_flow_verdict_fails_on_a_double_enqueue_an_early_child_or_a_loss() -> None:
    plan = Plan(batches={"b": ["m1", "m2"]}, chains=[["a", "c"]])
    acked = {"b", "m1", "m2", "a", "c"}
    state = {"batches": {"b": type("Info", (), {"total": 2, "succeeded": 2, "dead": 0,
                                                "state": "done"})()},
             "left": {"outbox entries": 0}}
    kill = {"at": 700.0, "end": 710.0, "kind": "kill_worker", "detail": "worker pid 7"}  # ms
    good = [run("start", "m1", 100_000), run("end", "m1", 200_000),
            run("start", "m2", 100_000), run("end", "m2", 300_000),
            run("start", "a", 100_000), run("end", "a", 150_000),
            run("start", "c", 400_000, pid=8), run("end", "c", 450_000, pid=8),
            run("start", "b@1", 500_000), run("end", "b@1", 510_000),
            # b@2 started on pid 7 which the kill hit, then ran again: a re-run, one enqueue
            run("start", "b@2", 600_000), run("start", "b@2", 4_000_000, pid=8, attempt=2),
            run("end", "b@2", 4_100_000, pid=8, attempt=2)]
    verdict = judge_flow(plan, acked, good, [kill], state)
    assert verdict.ok, verdict
    assert verdict.rerun_causes == {"kill_worker": 1} and verdict.callback_reruns == {"b@2": 1}
    assert verdict.callback_enqueues == {"1": 2}
    twice = [*good, run("start", "b@1", 5_000_000, pid=8, created=2)]
    failed = judge_flow(plan, acked, twice, [kill], state)
    assert failed.callbacks_enqueued_twice == ["b@1"] and not failed.ok
    early = [*good, run("start", "c", 120_000, pid=8)]  # before its parent a ended
    assert not judge_flow(plan, acked, early, [kill], state).ok
    lost = [r for r in good if r["id"] != "m2" or r["ev"] == "start"]
    verdict = judge_flow(plan, acked, lost, [kill], state)
    assert verdict.lost_ids == ["m2"] and not verdict.ok
    assert not judge_flow(plan, acked, good, [], state).ok  # a re-run nothing explains
    left = {**state, "left": {"outbox entries": 1}}
    assert not judge_flow(plan, acked, good, [kill], left).ok
