"""The short chaos run (the long one is `make chaos`): faults while jobs flow, nothing lost."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.run import Settings, run_chaos


def test_short_chaos_run_loses_nothing_and_is_never_early(tmp_path: Path) -> None:
    settings = Settings(jobs=2000, spread=15.0, fault_interval=1.2, seed=7, out=tmp_path,
                        drain_timeout=60.0)
    verdict = run_chaos(settings)
    kinds = {str(f["kind"]) for f in verdict.faults}
    assert "kill_redis" in kinds and "kill_worker" in kinds
    assert verdict.enqueued_acknowledged == 2000
    assert verdict.lost == 0, verdict.lost_ids
    assert verdict.early == 0
    assert verdict.handled_at_least_once == verdict.enqueued_acknowledged
    assert "unexplained" not in verdict.duplicate_causes
    assert (tmp_path / "verdict.json").exists()
