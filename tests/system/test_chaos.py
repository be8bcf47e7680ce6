"""The short chaos run (the long one is `make chaos`): faults while jobs flow, nothing lost."""

from __future__ import annotations

from pathlib import Path

from tests.system.chaos.run import Settings, run_chaos
from tests.system.chaos.verdict import judge


def test_short_chaos_run_loses_nothing_and_is_never_early(tmp_path: Path) -> None:
    settings = Settings(jobs=2000, spread=15.0, fault_interval=1.2, seed=7, out=tmp_path,
                        drain_timeout=60.0)
    verdict = run_chaos(settings)
    injected = verdict.faults_by_kind  # only the faults that really happened count
    assert injected.get("kill_redis", 0) >= 1 and injected.get("kill_worker", 0) >= 1, injected
    assert verdict.enqueued_acknowledged == 2000
    assert verdict.lost == 0, verdict.lost_ids
    assert verdict.early == 0
    assert verdict.handled_at_least_once == verdict.enqueued_acknowledged
    assert "unexplained" not in verdict.duplicate_causes
    assert (tmp_path / "verdict.json").exists()


def test_verdict_fails_on_a_lost_early_refused_or_unexplained_job() -> None:
    acknowledged = {"a": 10_000, "b": 20_000}
    kill = {"at": 20_500.0, "end": 20_510.0, "kind": "kill_worker", "detail": "worker pid 7"}
    pause = {"at": 19_000.0, "end": 19_700.0, "kind": "client_pause", "detail": "700 ms"}
    good = [{"id": "a", "start": 10_005.0, "pid": 7}, {"id": "b", "start": 20_010.0, "pid": 7},
            {"id": "b", "start": 23_600.0, "pid": 8}]
    verdict = judge(acknowledged, good, [pause, kill], 0)
    assert verdict.ok and verdict.duplicate_causes == {"kill_worker": 1}
    assert verdict.faults_by_kind == {"client_pause": 1, "kill_worker": 1}
    assert verdict.lateness_during_faults_ms["count"] == 1  # b is due within 1 s of the faults
    assert verdict.lateness_outside_faults_ms["count"] == 1
    assert verdict.lateness_by_fault_kind_ms["kill_worker"]["max"] == 10.0
    other_pid = [*good[:2], {**good[2], "pid": 9}]  # the kill hit another process: the pause
    assert judge(acknowledged, [good[0], {**good[1], "pid": 9}, good[2]], [pause, kill],
                 0).duplicate_causes == {"client_pause": 1}
    assert judge(acknowledged, other_pid, [pause, kill], 0).ok
    assert not judge(acknowledged, good[1:], [kill], 0).ok  # a lost
    early = {"id": "a", "start": 9_000.0, "pid": 7}
    assert not judge(acknowledged, [early, *good[1:]], [kill], 0).ok
    assert not judge(acknowledged, good, [pause, kill], 20).ok  # enqueues refused
    dispatcher = {**kill, "kind": "kill_dispatcher", "detail": "dispatcher pid 5"}
    assert not judge(acknowledged, good, [dispatcher], 0).ok  # a duplicate nothing explains
    # a run that started between the kill being noted and the process being gone
    in_kill = [good[0], {**good[1], "start": 20_505.0}, good[2]]
    assert judge(acknowledged, in_kill, [kill], 0).duplicate_causes == {"kill_worker": 1}
    failed = {**kill, "detail": "not injected: connection refused"}
    assert judge(acknowledged, good, [failed], 0).faults_not_injected == 1
    # a fault recorded as not injected is no fault of its kind: it proves nothing was survived
    not_injected = judge(acknowledged, good[:2], [{**failed, "kind": "kill_redis"}, kill], 0)
    assert not_injected.faults_by_kind == {"kill_worker": 1}
    assert not_injected.faults_not_injected == 1
