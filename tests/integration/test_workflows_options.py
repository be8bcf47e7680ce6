"""Workflows with job options and expiry (docs/workflows.md#options-and-expiry), against a real
Redis server: a parent that ends by expiry (promoteDue, the open step's expireJobs, a hand-back
through requeue_entry) tells its children and its batch in the same script, as any dead end
does; a waiting child keeps its priority, key and expiry, and gets its deadline when released."""

from __future__ import annotations

import asyncio
import time

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.integration.test_pull import promote
from tests.support.expiring import deadline_of, give_deadline

pytestmark = pytest.mark.timeout(60)
PAST = 0.4  # seconds slept so that a deadline 150 ms ahead has passed
LATER = 0.8  # the same for 0.5 s


def dead_errors(q: sd.Queue) -> dict[str, str]:
    """Dead letters of topic ``t``: id -> error."""
    return {d.id: d.error for d in q.dead_list("t", limit=100)}


def promote_all(q: sd.Queue, rounds: int = 3) -> None:
    """A few promoteDue calls (a dispatcher's, no loop): expired jobs are not "moved"."""
    async def run() -> None:
        dispatcher = sd.Dispatcher(q.config)
        try:
            for _ in range(rounds):
                await dispatcher.promote_once(PartitionKeys(q.name, 0))
                await asyncio.sleep(0.01)
        finally:
            await dispatcher.close()

    asyncio.run(run())


def drain(q: sd.Queue) -> list[str]:
    """Serve topic ``t`` until idle; the ids the handler ran."""
    ran: list[str] = []
    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler("t")(lambda job: ran.append(job.id))
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 30))
    return ran


def test_a_parent_expired_while_delayed_tells_its_children_and_its_batch(
        redis_url: str, queue_name: str) -> None:
    """promoteDue expires the parent and, in the same call, dead-letters the child that waits
    for it, releases the one that runs anyway (due in the past: ranked before the expired ones
    in the delayed set, and still there afterwards) and counts the batch member dead."""
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p", expires=60)
        q.enqueue("t", id="c", after=["p"])
        q.enqueue("t", id="r", after=["p"], on_parent_failure="run", at=time.time() - 5)
        q.batch([sd.JobSpec("t", id="m", expires=60)], id="b",
                on_complete=sd.JobSpec("t", {"done": True}))
        give_deadline(q, "p", -1)
        give_deadline(q, "m", -1)
        promote_all(q)
        dead = dead_errors(q)
        assert dead == {"p": "expired", "m": "expired", "c": "parent failed: p"}
        released = q.get("r")
        assert released is not None and released.state in ("delayed", "ready")
        info = q.batch_info("b")
        assert info is not None and (info.dead, info.pending, info.state) == (1, 0, "done")
        assert sorted(drain(q)) == ["b@2", "r"]


def test_a_parent_expired_in_its_stream_tells_its_child(redis_url: str, queue_name: str
                                                         ) -> None:
    """The open step settles the parent with expireJobs (its deadline passed in the stream):
    the child goes dead in that script."""
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p", expires=0.5)
        q.enqueue("t", id="c", after=["p"])
        promote(q)  # in time: its entry carries the deadline
        time.sleep(LATER)  # which passes while no consumer reads
        assert drain(q) == []
        assert dead_errors(q) == {"p": "expired", "c": "parent failed: p"}


def test_a_parent_expired_at_its_hand_back_tells_its_child(redis_url: str, queue_name: str
                                                            ) -> None:
    """A delivery handed back after its deadline (requeue_entry) expires the parent; its
    child goes dead in the same script."""
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p", expires=0.5)
        q.enqueue("t", id="c", after=["p"])
        q.reserve("t")
        promote(q)
        [held] = q.reserve("t", wait=1)
        time.sleep(LATER)
        assert held.release() is False
        assert dead_errors(q) == {"p": "expired", "c": "parent failed: p"}


def test_a_waiting_child_keeps_its_options_and_gets_its_deadline_when_released(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="a")
        made = q.enqueue("t", id="c", after=["a"], priority=9, key="k1", expires=60)
        assert made.id == "{k1}c" and made.state == "waiting"
        info = q.get("{k1}c")
        assert info is not None and (info.priority, info.key, info.expires_at) == (9, "k1", None)
        assert q.client.hget(PartitionKeys(q.name, 0).staged, "t") == b"1"
        q.enqueue("t", id="late", after=["a"], expires=0.15)
        q.reserve("t")
        promote(q)
        [parent] = q.reserve("t", wait=1)
        parent.ack()
        info = q.get("{k1}c")
        assert info is not None and info.state == "delayed"
        assert (info.priority, info.key) == (9, "k1")
        assert info.expires_at == info.due + 60_000 == deadline_of(q, "{k1}c")
        time.sleep(PAST)  # "late" was released with a deadline 150 ms after its due time
        promote_all(q)
        assert dead_errors(q) == {"late": "expired"}


def test_chains_and_batches_carry_options_and_flag_staged_topics_in_partition_0(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        key = next(k for k in (f"k{i}" for i in range(50)) if partition_of("{" + k + "}x", 3))
        q.enqueue("t", id="a")
        [first, second] = q.chain([sd.JobSpec("t", id="x1"),
                                   sd.JobSpec("t", id="x", key=key, priority=2, expires=30)])
        assert second.id == "{" + key + "}x" and second.state == "waiting"
        info = q.get(second.id)
        assert info is not None and (info.priority, info.key) == (2, key)
        assert q.client.hget(PartitionKeys(q.name, 0).staged, "t") == b"1"
        q.batch([sd.JobSpec("t", id="m", priority=8)], id="bb")
        member = q.get("m")
        assert member is not None and member.priority == 8 and first.state == "delayed"
        with pytest.raises(sd.ValidationError) as refused:  # a callback's id is derived
            q.batch([], id="b2", on_success=sd.JobSpec("t", id="mine", priority=9))
        assert refused.value.field == "on_success"
        assert q.batch_info("b2") is None
