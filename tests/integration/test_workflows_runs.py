"""Workflows and the lives of an id (docs/workflows.md#runs), against a real Redis server on
one partition and on four: an outcome counts only for the run of the parent the child waits
for (an early note or an outbox entry of another run changes nothing), cancelling a waiting
child unlinks it from its parents, an enqueue of an id that exists links nothing, and a child
waits for every parent (its state and its parents' outcomes after the first one ends)."""

from __future__ import annotations

import asyncio

import pytest

import streamdelay as sd
from streamdelay.client.enqueuing import prepare_job
from streamdelay.client.flow_plans import after_job, flow_plan
from streamdelay.dispatch.outbox import forward_plan, read_outbox_command
from streamdelay.io.runner import drive_sync, run_step_sync
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import ScriptCall

pytestmark = pytest.mark.timeout(120)
PARTS = 4


def apart(prefix: str, others: list[str], partitions: int) -> str:
    """The first ``<prefix><n>`` whose partition is none of ``others``' (on one partition:
    ``<prefix>0``)."""
    taken = {partition_of(o, partitions) for o in others}
    for n in range(1000):
        candidate = f"{prefix}{n}"
        if partitions == 1 or partition_of(candidate, partitions) not in taken:
            return candidate
    raise AssertionError("no id found")


def forward_all(q: sd.Queue) -> int:
    """Forward every partition's outbox once, as the dispatchers do; entries forwarded."""
    forwarded = 0
    for p in range(q.config.partitions):
        keys = PartitionKeys(q.name, p)
        reply = run_step_sync(q.client, read_outbox_command(keys, None))
        forwarded += sum(len(entries) for _, entries in reply or [])
        drive_sync(q.client, forward_plan(keys, q.config.partitions, reply), None)
    return forwarded


def promote_all(q: sd.Queue) -> None:
    """One promoteDue round on every partition (a dispatcher's, no loop)."""
    async def run() -> None:
        dispatcher = sd.Dispatcher(q.config)
        try:
            for p in range(q.config.partitions):
                await dispatcher.promote_once(PartitionKeys(q.name, p))
        finally:
            await dispatcher.close()

    asyncio.run(run())


def run_now(q: sd.Queue, job_id: str, topic: str, ok: bool = True) -> None:
    """Make ``job_id`` due now, take it and acknowledge it (or fail it dead)."""
    assert q.reschedule(job_id, delay=0)
    promote_all(q)
    [taken] = q.reserve(topic, wait=0)
    assert taken.id == job_id
    if ok:
        taken.ack()
    else:
        taken.fail("boom", dead=True)


def children_of(q: sd.Queue, job_id: str) -> set[bytes]:
    """The raw members of ``children:<job_id>`` in its partition."""
    keys = PartitionKeys(q.name, partition_of(job_id, q.config.partitions))
    return set(q.client.smembers(keys.prefix + "children:" + job_id))


def early_notes(q: sd.Queue) -> list[bytes]:
    """Every ``early:`` key of the queue, on any partition."""
    return list(q.client.scan_iter(match=f"*{q.name}*early:*", count=1000))


def delivered(q: sd.Queue, topic: str) -> list[str]:
    """Ids of ``topic`` a consumer can take now (after a promote round), taken and acked."""
    promote_all(q)
    taken = q.reserve(topic, wait=0, count=100)
    for r in taken:
        r.ack()
    return [r.id for r in taken]


@pytest.mark.parametrize("partitions", [1, PARTS])
@pytest.mark.parametrize("variant", ["forwarded", "noted-early", "in-flight"])
def test_a_recreated_child_waits_for_the_new_run_of_its_parent(
        redis_url: str, queue_name: str, partitions: int, variant: str) -> None:
    """The item's sequence: a child cancelled while it waits, its parent then succeeds; the
    same ids enqueued again: the new child waits for the new parent. ``forwarded``: the
    cancel's unlink reached the parent before it ended (no hand-over, no note);
    ``noted-early``: it had not, and the old run's outcome was noted early for the absent
    child; ``in-flight``: that outcome is still in the outbox when the ids come back."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        parent = "p0"
        child = apart("c", [parent], partitions)
        q.enqueue("p", id=parent, delay=3600)
        assert q.enqueue("c", id=child, after=[parent]).state == "waiting"
        assert q.cancel(child)
        if variant == "forwarded":
            forward_all(q)
            # cancelling a waiting child unlinks it from its parent, on every partition
            assert children_of(q, parent) == set()
        run_now(q, parent, "p")
        if variant != "in-flight":
            forward_all(q)
        if variant == "forwarded":
            assert early_notes(q) == []  # the cancelled child leaves no 24 h key
        assert q.enqueue("p", id=parent, delay=3600).created
        again = q.enqueue("c", id=child, after=[parent])
        assert again.created and again.state == "waiting", again
        forward_all(q)
        info = q.get(child)
        assert info is not None and info.state == "waiting", info
        assert info.parents == {parent: "pending"}
        assert delivered(q, "c") == []
        # the new parent's own end releases it, once
        run_now(q, parent, "p")
        forward_all(q)
        assert delivered(q, "c") == [child]
        assert early_notes(q) == []


@pytest.mark.parametrize("partitions", [1, PARTS])
@pytest.mark.parametrize("forward_before", [True, False], ids=["noted-early", "in-flight"])
def test_a_hand_over_of_another_run_is_not_trusted(redis_url: str, queue_name: str,
                                                   partitions: int, forward_before: bool
                                                   ) -> None:
    """A child dead for its first parent keeps its link to its second; purged, then that
    parent succeeds: its hand-over belongs to the link of the purged child. The same ids
    enqueued again: the new child waits for the new run of the parent, whether the old
    hand-over was noted early (forwarded before) or is still in the outbox."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        first = "p0"
        second = apart("q", [first], partitions)
        child = apart("c", [first, second], partitions)
        q.enqueue("p", id=first, delay=3600)
        q.enqueue("p", id=second, delay=3600)
        q.enqueue("c", id=child, after=[first, second])
        run_now(q, first, "p", ok=False)
        forward_all(q)
        dead = q.get(child)
        assert dead is not None and dead.state == "dead", dead
        assert q.dead_purge("c") == 1
        run_now(q, second, "p")
        if forward_before:
            forward_all(q)
        assert q.enqueue("p", id=second, delay=3600).created
        again = q.enqueue("c", id=child, after=[second])
        assert again.created and again.state == "waiting", again
        forward_all(q)
        info = q.get(child)
        assert info is not None and info.state == "waiting", info
        assert delivered(q, "c") == []
        run_now(q, second, "p")
        forward_all(q)
        assert delivered(q, "c") == [child]
        assert early_notes(q) == []


@pytest.mark.parametrize("ok", [True, False], ids=["succeeded", "dead"])
def test_an_outcome_noted_early_for_this_link_counts(redis_url: str, queue_name: str,
                                                     ok: bool) -> None:
    """The parent of another partition ends between the link and the child's write: its
    outcome, noted early under this enqueue's token, is what the child is written with."""
    with sd.Queue(queue_name, url=redis_url, partitions=PARTS) as q:
        parent = "p0"
        child = apart("c", [parent], PARTS)
        q.enqueue("p", id=parent, delay=3600)
        job = after_job(q.config, prepare_job(q.config, sd.JobSpec("c", id=child)), [parent],
                        "dead")
        plan = flow_plan(q.config, [job])
        link = next(plan)
        reply = run_step_sync(q.client, link)
        run_now(q, parent, "p", ok=ok)
        forward_all(q)
        assert len(early_notes(q)) == 1  # the child is not written yet
        try:
            step = plan.send(reply)
            while True:
                step = plan.send(run_step_sync(q.client, step))
        except StopIteration as done:
            [made] = done.value
        assert made.created and made.state == ("delayed" if ok else "dead"), made
        assert early_notes(q) == []
        info = q.get(child)
        assert info is not None and info.parents == (
            {parent: "succeeded"} if ok else None), info


@pytest.mark.parametrize("partitions", [1, PARTS])
def test_a_write_retried_after_its_reply_was_lost_keeps_its_links(
        redis_url: str, queue_name: str, partitions: int) -> None:
    """The runner sends a step again after a connection error: the write finds the job its
    first try wrote, with this call's token, answers as that try did (created, waiting) and
    the call takes none of its links back; the parent's end releases the child."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        parent = "p0"
        child = apart("c", [parent], partitions)
        q.enqueue("p", id=parent, delay=3600)
        job = after_job(q.config, prepare_job(q.config, sd.JobSpec("c", id=child)), [parent],
                        "dead")
        plan = flow_plan(q.config, [job])
        step = next(plan)
        retried = 0
        try:
            while True:
                reply = run_step_sync(q.client, step)
                if isinstance(step, ScriptCall) and step.script.name == "enqueueFlow":
                    reply = run_step_sync(q.client, step)  # the first reply was lost
                    retried += 1
                step = plan.send(reply)
        except StopIteration as done:
            [made] = done.value
        assert retried == 1
        assert made.created and made.state == "waiting", made
        forward_all(q)
        assert len(children_of(q, parent)) == 1
        run_now(q, parent, "p")
        forward_all(q)
        assert delivered(q, "c") == [child]


@pytest.mark.parametrize("partitions", [1, PARTS])
@pytest.mark.parametrize("existing", ["delayed", "waiting"])
def test_an_enqueue_of_an_existing_id_links_nothing(redis_url: str, queue_name: str,
                                                    partitions: int, existing: str) -> None:
    """SPEC §3.6: an enqueue of an id that exists changes nothing, so it does not make the
    job a child of the parents it names either."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        other = "x0"
        parent = apart("b", [other], partitions)
        job = apart("a", [other, parent], partitions)
        q.enqueue("t", id=other, delay=3600)
        q.enqueue("t", id=parent, delay=3600)
        if existing == "delayed":
            q.enqueue("t", id=job, delay=3600)
        else:
            assert q.enqueue("t", id=job, after=[other]).state == "waiting"
        made = q.enqueue("t", id=job, after=[parent])
        assert not made.created and made.state == existing
        info = q.get(parent)
        assert info is not None and info.children is None, info.children
        forward_all(q)
        assert children_of(q, parent) == set()
        mine = q.get(job)
        assert mine is not None and mine.state == existing
        assert mine.parents == ({other: "pending"} if existing == "waiting" else None)
        # the parent's end changes nothing for the job
        run_now(q, parent, "t")
        forward_all(q)
        after = q.get(job)
        assert after is not None and after.state == existing


@pytest.mark.parametrize("partitions", [1, PARTS])
def test_a_child_waits_until_its_last_parent_has_succeeded(redis_url: str, queue_name: str,
                                                           partitions: int) -> None:
    """After the first parent's acknowledgement (and every hand-over forwarded) the child
    still waits, its parents' outcomes as they are; the second one's releases it."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        first = "a0"
        second = apart("b", [first], partitions)
        child = apart("c", [first, second], partitions)
        q.enqueue("p", id=first, delay=3600)
        q.enqueue("p", id=second, delay=3600)
        assert q.enqueue("c", id=child, after=[first, second]).state == "waiting"
        run_now(q, first, "p")
        forward_all(q)
        info = q.get(child)
        assert info is not None and info.state == "waiting", info
        assert info.parents == {first: "succeeded", second: "pending"}
        assert delivered(q, "c") == []
        assert q.stats().topics["c"].waiting == 1
        run_now(q, second, "p")
        forward_all(q)
        assert delivered(q, "c") == [child]
        assert q.get(child) is None
