"""Never twice at once across a short Redis outage and a short cut-off of one worker
(docs/guarantees.md#never-twice-at-once), with the rig of ``tests/support/outage_rig.py``: two
worker processes, 40 jobs of 6 s with a ttr of 3 s; redis-server (AOF) killed with -9 and
restarted 2 s later, or one worker's link down for 1 s. No job may run in two handlers at
once. Two trials of each here; ``make outage-trials`` runs 20 of each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.outage_rig import netns_available, partition_trials, report, restart_trials

pytestmark = pytest.mark.timeout(240)
TRIALS = 2


def test_a_redis_restart_from_its_aof_does_not_run_a_job_twice_at_once(tmp_path: Path) -> None:
    trials = restart_trials(TRIALS, tmp_path)
    print(report("redis restart", trials))
    assert [t.overlapping for t in trials] == [0] * TRIALS, report("redis restart", trials)


def test_a_worker_cut_off_shorter_than_the_bound_keeps_its_jobs(tmp_path: Path) -> None:
    if (why := netns_available()):
        pytest.skip(why)
    trials = partition_trials(TRIALS, tmp_path)
    print(report("partition", trials))
    assert [t.overlapping for t in trials] == [0] * TRIALS, report("partition", trials)
