"""The workflow plans (``client/flow_plans.py``, ``dispatch/outbox.py``) against recorded
replies, no Redis: which partition links a parent, what the scripts are told, refusals naming
the field before anything is sent, the outbox read and its hand-over."""

from __future__ import annotations

from typing import Any

import pytest

import streamdelay as sd
from streamdelay.client.enqueuing import prepare_values
from streamdelay.client.flow_plans import (
    MAX_PARENTS,
    FlowJob,
    after_job,
    batch_home,
    batch_plan,
    chain_jobs,
    check_after,
    flow_plan,
)
from streamdelay.dispatch.outbox import forward_plan, outbox_key
from streamdelay.io.config import QueueConfig
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import ScriptCall
from tests.unit.test_replies import drive, name_of

CFG = QueueConfig("orders", "redis://127.0.0.1:1/0", partitions=3)


def _job(job_id: str) -> Any:
    return prepare_values(CFG, "t", None, None, None, job_id, None, None, None, None, False,
                          None)


def _other(of: str, prefix: str) -> str:
    return next(f"{prefix}{i}" for i in range(100)
                if partition_of(f"{prefix}{i}", 3) != partition_of(of, 3))


def test_after_is_checked_before_any_step() -> None:
    assert check_after(["a", "b", "a"], "c") == ("a", "b")
    for bad in ("a", [], ["c"], ["no spaces"], [f"p{i}" for i in range(MAX_PARENTS + 1)]):
        with pytest.raises(sd.ValidationError) as refused:
            check_after(bad, "c")
        assert refused.value.field == "after"
    with pytest.raises(sd.ValidationError) as policy:
        after_job(CFG, _job("c"), ["a"], "sometimes")
    assert policy.value.field == "on_parent_failure"
    with pytest.raises(sd.ValidationError) as chain:
        chain_jobs(CFG, [])
    assert chain.value.field == "specs"


def test_a_parent_of_another_partition_is_linked_there_first() -> None:
    child = "kid"
    parent = _other(child, "p")
    job = FlowJob(_job(child), (parent,))
    steps_seen: list[Any] = []

    def answer(step: Any) -> Any:
        steps_seen.append(step)
        if isinstance(step, list):  # the links, one call per parent partition
            return [[b"l"]]
        return [b"+w"]

    results, _ = drive(flow_plan(CFG, [job]), answer)
    link = steps_seen[0][0]
    assert name_of(link) == "linkChildren"
    assert link.keys == PartitionKeys("orders", partition_of(parent, 3)).script_keys()
    # the ref carries this enqueue's link token (docs/workflows.md#runs), and so does the write
    assert link.args[1:] == (parent, f"{partition_of(child, 3)}|{child}|{job.token}")
    assert len(job.token) == 16
    write = steps_seen[1]
    assert isinstance(write, ScriptCall) and name_of(write) == "enqueueFlow"
    assert f"l|{parent}" in write.args and job.token in write.args
    assert results[0].state == "waiting" and results[0].created
    assert len(steps_seen) == 2  # a child created waiting: nothing to take back


@pytest.mark.parametrize("reply", [b"d:123", b"+x"])
def test_a_job_that_waits_for_nothing_takes_its_links_back(reply: bytes) -> None:
    """An id found taken (SPEC 3.6: nothing changes) or a child created dead: the links
    the call made in other partitions go again, ``'-'`` triples of ``forwardOutcomes``."""
    child = "kid"
    parent = _other(child, "p")
    job = FlowJob(_job(child), (parent,))
    steps_seen: list[Any] = []

    def answer(step: Any) -> Any:
        steps_seen.append(step)
        if isinstance(step, list):
            return [[b"l"]]
        return [reply] if name_of(step) == "enqueueFlow" else 0

    drive(flow_plan(CFG, [job]), answer)
    take_back = steps_seen[2]
    assert name_of(take_back) == "forwardOutcomes"
    assert take_back.keys == PartitionKeys("orders", partition_of(parent, 3)).script_keys()
    assert take_back.args == (f"{partition_of(child, 3)}|{child}|{job.token}", parent, "-")
    again = FlowJob(_job(child), (parent,))
    drive(flow_plan(CFG, [again]), answer)
    assert again.token != job.token  # a token per enqueue call


def test_an_unknown_parent_of_another_partition_writes_nothing() -> None:
    parent = _other("kid", "p")
    seen: list[Any] = []
    with pytest.raises(sd.ValidationError) as refused:
        drive(flow_plan(CFG, [FlowJob(_job("kid"), (parent,))]),
              lambda step: seen.append(step) or [[b"n"]])
    assert refused.value.field == "after" and parent in str(refused.value)
    assert len(seen) == 1  # only the link was asked: no enqueueFlow


def test_a_chain_across_partitions_carries_its_links_in_the_write() -> None:
    first = "a0"
    second = _other(first, "b")
    jobs = chain_jobs(CFG, [sd.JobSpec("t", id=first), sd.JobSpec("t", id=second)])
    calls: list[ScriptCall] = []

    def answer(step: Any) -> Any:
        calls.extend(step if isinstance(step, list) else [step])
        return [[7], [b"+w"]] if isinstance(step, list) else [7]

    drive(flow_plan(CFG, jobs), answer)
    assert [name_of(c) for c in calls] == ["enqueueFlow", "enqueueFlow"]  # no link step
    by_id = {c.args[2]: c for c in calls}
    assert f"{partition_of(second, 3)}|{second}|{jobs[1].token}" in by_id[first].args
    assert f"l|{first}" in by_id[second].args


def test_the_outbox_is_forwarded_then_dropped() -> None:
    keys = PartitionKeys("orders", 1)
    reply = [[outbox_key(keys).encode(), [
        (b"1-0", [b"p", b"0", b"r", b"kid", b"f", b"par", b"o", b"s"]),
        (b"2-0", [b"p", b"2", b"r", b"#b", b"f", b"m1", b"o", b"x"]),
        (b"3-0", [b"p", b"9", b"r", b"junk", b"f", b"z", b"o", b"s"])]]]
    seen: list[Any] = []

    def answer(step: Any) -> Any:
        seen.append(step)
        return [1, 1] if isinstance(step, list) else 3

    changed, _ = drive(forward_plan(keys, 3, reply), answer)
    applied, dropped = seen
    assert [c.keys for c in applied] == [PartitionKeys("orders", p).script_keys() for p in (0, 2)]
    assert applied[0].args == ("kid", "par", "s") and applied[1].args == ("#b", "m1", "x")
    assert name_of(dropped) == "dropOutbox" and dropped.args == ("1-0", "2-0", "3-0")
    assert changed == 2
    assert batch_home("b", 3) == partition_of("b@1", 3) == partition_of("b@2", 3)


def test_a_batch_stores_its_callbacks_options_and_flags_their_staged_topic_first() -> None:
    """A callback's options ride in front of it (``o<priority>|<expires_ms>|<key>|``); its
    topic, staged by them, is flagged in partition 0 in the round trip of ``openBatch`` (before
    it) when the batch lives elsewhere; a keyed callback keys the batch id."""
    bid = next(f"b{i}" for i in range(100) if batch_home(f"b{i}", 3))
    steps: list[Any] = []

    def answer(step: Any) -> Any:
        steps.append(step)
        return [1, [0, 0, 0, 1, 1, 5]] if isinstance(step, list) else [0, 0, 0, 1, 1, 5]

    info, _ = drive(batch_plan(CFG, [], bid, sd.JobSpec("ok", priority=9, expires=600),
                               sd.JobSpec("done"), True), answer)
    marks, opening = steps[0]
    assert name_of(marks) == "markStaged" and marks.args == ("ok",)
    assert name_of(opening) == "openBatch"
    cb1, cb2 = opening.args[4], opening.args[5]
    assert cb1.startswith(b"o9|600000||r|0|") and b"|ok|" in cb1
    assert cb2.startswith(b"r|0|")  # no options: the form of a batch without any
    assert (info.id, info.state, info.on_success) == (bid, "done", bid + "@1")
    steps.clear()
    keyed, _ = drive(batch_plan(CFG, [], "pages", None, sd.JobSpec("done", key="t-1"), True),
                     answer)
    assert keyed.id == "{t-1}pages" and keyed.on_complete == "{t-1}pages@2"
    [opened] = [s for s in steps if not isinstance(s, list)] or [steps[0][1]]
    assert opened.keys == PartitionKeys("orders", partition_of("{t-1}x", 3)).script_keys()
