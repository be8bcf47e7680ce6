"""Workflows across partitions (docs/workflows.md#across-partitions): a parent in one
partition and its waiter in another hand over through the parent's outbox, forwarded by the
dispatchers with an idempotent script; never lost, never applied twice."""

from __future__ import annotations

import pytest

import streamdelay as sd
from streamdelay.dispatch.outbox import forward_plan, outbox_key, read_outbox_command
from streamdelay.io.runner import drive_sync
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.plan import Plan, Step
from tests.integration.test_workflows import recorder, run_worker

pytestmark = pytest.mark.timeout(120)


def spread(prefix: str, count: int, partitions: int = 3) -> list[str]:
    """``count`` ids whose partitions alternate: no two neighbours share one."""
    ids: list[str] = []
    n = 0
    while len(ids) < count:
        candidate = f"{prefix}{n}"
        n += 1
        if not ids or partition_of(candidate, partitions) != partition_of(ids[-1], partitions):
            ids.append(candidate)
    return ids


def test_a_chain_across_partitions_runs_in_order(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        ids = spread("c", 12)
        q.chain([sd.JobSpec("t", id=i) for i in ids])
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == ids


def test_fan_in_from_every_partition_and_a_late_child(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3, max_attempts=1) as q:
        parents = [f"p{i}" for i in range(20)]
        assert len({partition_of(p, 3) for p in parents}) == 3
        for p in parents:
            q.enqueue("t", id=p)
        assert q.enqueue("t", id="child", after=parents).state == "waiting"
        q.enqueue("t", id="bad")
        q.enqueue("t", id="doomed", after=["bad", "p1"])
        with pytest.raises(sd.ValidationError) as unknown:
            q.enqueue("t", id="orphan", after=["p1", "nobody-knows"])
        assert unknown.value.field == "after"
        ran, handle = recorder(frozenset({"bad"}))
        run_worker(q, handle)
        assert ran[-1] == "child" and sorted(ran[:-1]) == sorted([*parents, "bad"])
        late = [p for p in parents if partition_of(p, 3) != partition_of("late", 3)]
        assert q.enqueue("t", id="late", after=late).state == "delayed"
        dead = {d.id: d.error for d in q.dead_list("t")}
        assert dead["doomed"] == "parent failed: bad"


def test_a_batch_across_partitions_calls_back_once(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        q.batch([sd.JobSpec("t", id=f"m{i}") for i in range(30)], id="b",
                on_success=sd.JobSpec("done"), on_complete=sd.JobSpec("done"))
        run_worker(q, recorder()[1])
        done, handle = recorder()
        run_worker(q, handle, "done")
        assert sorted(done) == ["b@1", "b@2"]
        info = q.batch_info("b")
        assert info is not None and (info.succeeded, info.pending, info.state) == (30, 0, "done")


def test_an_outbox_entry_forwarded_twice_counts_once(redis_url: str, queue_name: str) -> None:
    """A dispatcher killed after forwarding and before dropping: the next one forwards the
    same entries again, and nothing changes the second time."""
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        parent = "a0"
        child = next(f"k{i}" for i in range(100)
                     if partition_of(f"k{i}", 3) != partition_of(parent, 3))
        q.enqueue("t", id=parent)
        q.enqueue("t", id=child, after=[parent])
        keys = PartitionKeys(queue_name, partition_of(parent, 3))
        assert q.cancel(parent)  # ends it: one outbox entry for the child
        reply = run_step_sync(q.client, read_outbox_command(keys, None))
        # forwarded once without the drop (as if killed), then again whole
        plan = forward_plan(keys, 3, reply)
        assert drive_sync(q.client, iter_once(next(plan)), None) == 1
        assert q.get(child).state == "dead"  # type: ignore[union-attr]
        assert drive_sync(q.client, forward_plan(keys, 3, reply), None) == 0
        assert q.client.xlen(outbox_key(keys)) == 0
        assert len(q.dead_list("t")) == 1


def iter_once(step: Step) -> Plan[int]:
    """A plan of one step whose reply is its result."""
    reply = yield step
    return int(reply)
