"""The checker catches a broken build (docs/reliability.md#histories, SPEC §22): a real nemesis
run whose workers run one Lua script with one line changed (tests/system/nemesis/app.py
``BROKEN``) must be reported, by the rule that guards what the line broke:

- ``promote_early``: ``promoteDue`` moves what is due by the next ms too, a promotion 1 ms early:
  the ``dense`` workload has a job due in the ms after every promotion, and ``promoted_early``
  compares each delivery's stream entry time with its due time, both on the server clock;
- ``reclaim_ignores_ttr``: ``requeueStuck`` re-queues the running jobs of other consumers at
  once (idle limit 0 instead of the job's ttr): runs of 0.3-0.8 s, so a reclaim pass meets
  them, and ``overlap`` finds two runs of one job at once with no fault to excuse it;
- a callback fired twice: the same real history with one batch callback's run noted again as a
  first delivery (the defect a ``batch_fire`` without its ``fired`` guard would make), which
  ``callback`` reports; the history as recorded checks clean.

A correct build over the same workloads and seed checks clean (test_nemesis_quick.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.system.nemesis.app import TTR
from tests.system.nemesis.history import Allowances, check, load
from tests.system.nemesis.run import Settings, flows_of, run

pytestmark = pytest.mark.timeout(240)


def broken_run(tmp_path: Path, broken: str, workloads: list[str], seconds: float,
               work_s: str | None = None) -> set[str]:
    """A short run of ``workloads`` with every worker the broken build; the rules it broke."""
    settings = Settings(seed=11, duration=seconds, workloads=workloads, faults=[],
                        out=tmp_path, quick=True, plan=[], broken=broken, work_s=work_s,
                        settle_s=60.0)
    violations, figures = run(settings)
    assert figures["runs"], figures  # the broken build ran jobs
    return {v.rule for v in violations}


def test_a_promotion_one_ms_early_is_caught(tmp_path: Path) -> None:
    assert "promoted_early" in broken_run(tmp_path, "promote_early", ["dense"], 5.0)


def test_a_reclaim_that_ignores_ttr_is_caught(tmp_path: Path) -> None:
    assert "overlap" in broken_run(tmp_path, "reclaim_ignores_ttr", ["plain"], 6.0,
                                   work_s="0.3,0.8")


def test_a_callback_fired_twice_is_caught(tmp_path: Path) -> None:
    settings = Settings(seed=12, duration=5.0, workloads=["flows"], faults=[], out=tmp_path,
                        quick=True, plan=[])
    violations, figures = run(settings)
    assert violations == [] and figures["callbacks"], [str(v) for v in violations]
    records = load(tmp_path / "history")
    chains, batches = flows_of(tmp_path / "history")
    callback = next(r for r in records if r.kind == "callback")
    twice = dataclasses.replace(callback, seq=callback.seq + 100_000,
                                time_ms=callback.time_ms + 50)
    found = check([*records, twice], Allowances.from_docs(TTR * 1000), chains=chains,
                  batches=batches)
    assert [v.rule for v in found] == ["callback"], [str(v) for v in found]
    assert callback.fields["batch"] == found[0].job
    assert "ran 2 times as a first delivery" in found[0].message
