"""Batch callbacks with job options (docs/workflows.md#callback-options), against a real Redis
server: a callback is an ordinary job, so ``on_success`` / ``on_complete`` take a whole
``sd.JobSpec`` (priority, key, expires, ttr, max_attempts, delay, headers, keep_result) and the
callback written when the batch ends has them all; a keyed callback makes the batch id
``{key}<id>``; a callback's topic its options make staged is flagged in partition 0."""

from __future__ import annotations

import asyncio

import pytest

import streamdelay as sd
from streamdelay.dispatch.outbox import forward_plan, read_outbox_command
from streamdelay.io.runner import drive_sync, run_step_sync
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.system import test_docs_examples as docs_examples

example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples


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


def _end_members(q: sd.Queue, topic: str = "t") -> None:
    """Run the members (ack), then forward every outbox as the dispatchers do."""
    promote_all(q)
    for r in q.reserve(topic, count=100, wait=0):
        r.ack()
    for p in range(q.config.partitions):
        keys = PartitionKeys(q.name, p)
        reply = run_step_sync(q.client, read_outbox_command(keys, None))
        drive_sync(q.client, forward_plan(keys, q.config.partitions, reply), None)


def test_callbacks_carry_every_option(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3, max_attempts=1) as q:
        # a batch whose home is not partition 0: partition 0's staged flag comes from its call
        bid = next(b for b in (f"b{i}" for i in range(100)) if partition_of(b + "@1", 3))
        info = q.batch(
            [sd.JobSpec("t", id="m1"), sd.JobSpec("t", id="m2")], id=bid,
            on_success=sd.JobSpec("ok", {"n": 1}, priority=9, expires=600, ttr=7,
                                  max_attempts=4, headers={"x-team": "pages"}, keep_result=60),
            on_complete=sd.JobSpec("done", priority=2, delay=3600))
        assert (info.on_success, info.on_complete) == (bid + "@1", bid + "@2")
        assert q.client.hget(PartitionKeys(q.name, 0).staged, "ok") == b"1"
        _end_members(q)
        done = q.batch_info(bid)
        assert done is not None and (done.succeeded, done.state) == (2, "done")
        ok = q.get(bid + "@1")
        assert ok is not None and (ok.priority, ok.key, ok.max_attempts) == (9, None, 4)
        assert ok.ttr_ms == 7000 and ok.headers == {"x-team": "pages"}
        assert ok.expires_at is not None and ok.expires_at == ok.due + 600_000
        later = q.get(bid + "@2")
        assert later is not None and later.priority == 2 and later.expires_at is None
        assert later.due - later.created >= 3_599_000 and later.state == "delayed"
        promote_all(q)
        [taken] = q.reserve("ok", wait=0)  # a staged topic: taken through its lane
        assert taken.id == bid + "@1" and taken.priority == "9"
        taken.ack({"sent": True})
        result = q.result(bid + "@1")
        assert result is not None and result.value == {"sent": True}  # its keep_result


def test_a_keyed_callback_keys_the_batch_id(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        info = q.batch([sd.JobSpec("t", id="k1")], id="pages", close=False,
                       on_complete=sd.JobSpec("done", key="tenant-7"))
        assert info.id == "{tenant-7}pages" and info.on_complete == "{tenant-7}pages@2"
        more = q.batch([sd.JobSpec("t", id="k2")], id="{tenant-7}pages")  # a later call
        assert (more.total, more.state) == (2, "running")
        _end_members(q)
        cb = q.get("{tenant-7}pages@2")
        assert cb is not None and cb.key == "tenant-7"
        assert q.batch_info("{tenant-7}pages").state == "done"  # type: ignore[union-attr]
        fresh = q.batch([], on_success=sd.JobSpec("done", key="tenant-8"))
        assert fresh.id.startswith("{tenant-8}") and fresh.state == "done"


@pytest.mark.parametrize("kwargs, field", [
    ({"id": "{t1}b", "on_success": sd.JobSpec("d")}, "on_success"),  # key-less in a keyed batch
    ({"id": "b", "on_success": sd.JobSpec("d", key="t1"),
      "on_complete": sd.JobSpec("d", key="t2")}, "on_complete"),  # two keys
    ({"id": "b", "on_complete": sd.JobSpec("d", priority=10)}, "priority"),
    ({"id": "b", "on_complete": sd.JobSpec("d", expires=-1)}, "expires"),
    ({"id": "b", "on_complete": sd.JobSpec("d", id="mine")}, "on_complete"),
])
def test_bad_callback_options_are_refused_and_nothing_is_written(
        redis_url: str, queue_name: str, kwargs: dict[str, object], field: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        with pytest.raises(sd.ValidationError) as refused:
            q.batch([sd.JobSpec("t", id="never")], **kwargs)  # type: ignore[arg-type]
        assert refused.value.field == field
        assert q.client.keys(f"*{q.name}*") == []  # nothing written


def test_callbacks_for_a_closed_batch_are_refused_and_nothing_is_added(
        redis_url: str, queue_name: str) -> None:
    """A closed batch: other callbacks (or options) are refused naming the callback, new
    members naming ``id``; nothing of the refused call is written. The same call again is
    idempotent."""
    with sd.Queue(queue_name, url=redis_url) as q:
        q.batch([sd.JobSpec("t", id="c1", delay=60)], id="bc",
                on_complete=sd.JobSpec("done", priority=7))
        for other, field in ((dict(on_success=sd.JobSpec("done")), "on_success"),
                             (dict(on_complete=sd.JobSpec("done", priority=8)), "on_success")):
            with pytest.raises(sd.ValidationError) as refused:
                q.batch([sd.JobSpec("t", id="c2")], id="bc", **other)  # type: ignore[arg-type]
            assert refused.value.field == field
        with pytest.raises(sd.ValidationError) as closed:
            q.batch([sd.JobSpec("t", id="c2")], id="bc")
        assert closed.value.field == "id"
        assert q.get("c2") is None and q.batch_info("bc").total == 1  # type: ignore[union-attr]
        again = q.batch([sd.JobSpec("t", id="c1", delay=60)], id="bc",
                        on_complete=sd.JobSpec("done", priority=7))
        assert (again.total, again.state) == (1, "running")


def _forward_all(q: sd.Queue) -> None:
    """Forward every partition's outbox once, as the dispatchers do."""
    for p in range(q.config.partitions):
        keys = PartitionKeys(q.name, p)
        reply = run_step_sync(q.client, read_outbox_command(keys, None))
        drive_sync(q.client, forward_plan(keys, q.config.partitions, reply), None)


def _take_all(q: sd.Queue, topic: str) -> list[str]:
    """Promote, then take and acknowledge every ready job of ``topic``; their ids."""
    promote_all(q)
    taken = q.reserve(topic, count=100, wait=0)
    for r in taken:
        r.ack()
    return sorted(r.id for r in taken)


def _dead_member_batch(q: sd.Queue) -> tuple[str, str, str]:
    """A closed batch of two members, ``ok`` acknowledged and ``bad`` failed dead, every
    hand-over forwarded: (batch id, its ok member, its dead member). On three partitions the
    members live outside the batch's partition, so they hand over through the outbox."""
    parts = q.config.partitions
    bid = "bd"
    home = partition_of(bid + "@1", parts)
    ok, bad = (next(m for m in (f"{name}{i}" for i in range(100))
                    if parts == 1 or partition_of(m, parts) != home) for name in ("ok", "bad"))
    q.batch([sd.JobSpec("t", id=ok), sd.JobSpec("t", id=bad)], id=bid,
            on_success=sd.JobSpec("yes"), on_complete=sd.JobSpec("done"))
    promote_all(q)
    for r in q.reserve("t", count=10, wait=0):
        if r.id == ok:
            r.ack()
        else:
            assert r.fail("boom", dead=True) == "dead"
    _forward_all(q)
    return bid, ok, bad


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_batch_with_a_dead_member_writes_on_complete_once_and_no_on_success(
        redis_url: str, queue_name: str, partitions: int) -> None:
    """One member dead: ``<id>@1`` (on_success) is never written, ``<id>@2`` (on_complete)
    exactly once: a later call that reaches the batch's end check again (the same batch
    closed again, a hand-over forwarded again) writes it no second time, even once the
    first one ran and its id is free."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        bid, _, _ = _dead_member_batch(q)
        info = q.batch_info(bid)
        assert info is not None and (info.succeeded, info.dead, info.pending, info.state) == (
            1, 1, 0, "done")
        assert q.get(bid + "@1") is None
        done = q.get(bid + "@2")
        assert done is not None and done.state == "delayed"
        assert _take_all(q, "yes") == []
        assert _take_all(q, "done") == [bid + "@2"]  # ran: its id is free again
        again = q.batch([], id=bid)  # closes it again: the end check runs again
        assert again.state == "done" and (again.succeeded, again.dead) == (1, 1)
        _forward_all(q)
        assert q.get(bid + "@1") is None and q.get(bid + "@2") is None
        assert _take_all(q, "done") == [] and _take_all(q, "yes") == []


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_dead_member_replayed_after_the_batch_fired_changes_nothing(
        redis_url: str, queue_name: str, partitions: int) -> None:
    """A member's first end counts: the dead member replayed after the batch fired, and
    succeeding, does not turn the batch into a success (no ``<id>@1``), nor write
    ``<id>@2`` again."""
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        bid, _, bad = _dead_member_batch(q)
        assert _take_all(q, "done") == [bid + "@2"]
        assert q.dead_replay("t", id=bad) == 1
        assert _take_all(q, "t") == [bad]  # it succeeds this time
        _forward_all(q)
        info = q.batch_info(bid)
        assert info is not None and (info.succeeded, info.dead, info.state) == (1, 1, "done")
        assert q.get(bid + "@1") is None and q.get(bid + "@2") is None
        assert _take_all(q, "yes") == [] and _take_all(q, "done") == []


def test_the_callback_options_example_runs(example_env: dict[str, str]) -> None:
    assert docs_examples.run_example("workflow_callbacks.py", example_env).splitlines() == [
        "batch: {tenant-42}nov {tenant-42}nov@1 {tenant-42}nov@2",
        "archive {tenant-42}nov@2 priority=5 key=tenant-42 expires=False max_attempts=10",
        "notify {tenant-42}nov@1 priority=9 key=tenant-42 expires=True max_attempts=3",
        "batch: 3 done",
    ]
