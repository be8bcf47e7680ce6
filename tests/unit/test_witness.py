"""A Worker's reclaim witness (consume/core/upkeep_plans.py ``Witness``,
docs/guarantees.md#never-twice-at-
once): what it sends with each ``requeueStuck`` call and what it keeps of the answers."""

from __future__ import annotations

import pytest

from streamdelay.consume.core.upkeep_plans import Witness, requeue_stuck_plan
from streamdelay.protocol.keys import PartitionKeys


def test_the_arguments_follow_the_contact_per_partition() -> None:
    witness = Witness("me", 1700, running={(1, "t"): ["5-0", "6-0"]})
    assert witness.args(1, "t") == [0, 0, 1700, "me", "5-0", "6-0"]  # first call: anew
    assert witness.args(0, "t") == [0, 0, 1700, "me"]
    witness.saw(1, [b"0-0", [], [], 0, 50_000, 40_000])
    assert witness.args(1, "t")[:3] == [50_000, 40_000, 1700]
    assert witness.args(0, "t")[:2] == [0, 0]  # another partition: its own server and clock
    witness.saw(0, [b"0-0", [], [], 0])  # an answer of a release without the rule
    witness.saw(0, [b"0-0", [], [], 0, 7, -1])  # called without a witness
    assert witness.args(0, "t")[:2] == [0, 0]
    witness.lost()
    assert witness.args(1, "t")[:2] == [0, 0]


def test_the_walk_sends_the_witness_and_keeps_each_answer() -> None:
    witness = Witness("me", 1700, running={(0, "t"): ["9-0"]})
    plan = requeue_stuck_plan(PartitionKeys("q", 0), "g", "t", -1, "", witness)
    first = next(plan)
    assert list(first.args[6:]) == [0, 0, 1700, "me", "9-0"]
    second = plan.send([b"3-0", [], [], 0, 1000, 1000])
    assert list(second.args[6:8]) == [1000, 1000]
    with pytest.raises(StopIteration) as done:
        plan.send([b"0-0", [b"j"], [], 0, 1001, 1000])
    assert [r.moved for r in done.value.value] == [[], ["j"]]
    assert (witness.last_ms, witness.since_ms) == ({0: 1001}, {0: 1000})
    plain = requeue_stuck_plan(PartitionKeys("q", 0), "g", "t", -1, "")
    assert len(next(plain).args) == 6  # no witness: the call of every other reclaimer
