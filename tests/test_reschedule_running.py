"""Rescheduling a running job never starts a second run beside it (docs/guarantees.md#never-
twice-at-once, docs/guarantees.md#cancel-reschedule-inspect): ``reschedule`` and
``enqueue(replace=True)`` of a job a worker runs keep its delivery; the new due time applies to
the next run, which starts once the running delivery has settled (its ack frees it at once) or
its lease (ttr since its last heartbeat) has expired. Two real worker processes, each with one
slot, so the one that runs the job cannot take its next delivery itself."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.apps.reliability_app import Event, Workers, wait_for
from tests.promoting import promote_due

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def workers(redis_url: str, queue_name: str, tmp_path: Path) -> Iterator[Workers]:
    """Two one-slot worker processes of this test's queue (killed at the end)."""
    started = Workers(redis_url, queue_name, tmp_path)
    for name in ("a", "b"):
        started.start(name, "--concurrency", "1", "--ttr", "3").wait_ready()
    yield started
    started.stop_all()


def _runs(workers: Workers, job_id: str) -> list[tuple[Event, Event | None]]:
    """(start, done or None) of each run of job_id, in start order."""
    events = [e for e in workers.events() if e.id == job_id]
    runs: list[tuple[Event, Event | None]] = []
    for start in (e for e in events if e.ev == "start"):
        done = next((e for e in events if e.ev == "done" and e.pid == start.pid
                     and e.t >= start.t), None)
        runs.append((start, done))
    return runs


def _two_runs(workers: Workers, job_id: str) -> list[tuple[Event, Event | None]]:
    return wait_for(lambda: (r := _runs(workers, job_id)) and len(r) >= 2 and r[1][1] and r,
                    30, f"two finished runs of {job_id}")


@pytest.mark.parametrize("how", ["reschedule", "replace"])
def test_a_running_job_rescheduled_to_now_runs_again_only_after_its_run_settled(
        workers: Workers, queue: sd.Queue, how: str) -> None:
    queue.enqueue("slow", {"seconds": 1.5}, id="y", ttr=30)
    wait_for(lambda: _runs(workers, "y"), 15, "the first run of y")
    if how == "reschedule":
        assert queue.reschedule("y", delay=0) is True
    else:
        done = queue.enqueue("slow", {"seconds": 0.1}, id="y", replace=True)
        assert not done.created
    info = queue.get("y")
    assert info is not None and info.state == "delayed"  # waiting for the run to settle
    (_, first_done), (second, _) = _two_runs(workers, "y")[:2]
    assert first_done is not None
    assert second.t >= first_done.t, (
        f"the second run started {first_done.t - second.t:.3f} s before the first ended")
    # settled by its ack, not by the lease: the next run starts at once, not a ttr (30 s) later
    assert second.t - first_done.t < 5.0
    time.sleep(0.5)
    assert len(_runs(workers, "y")) == 2  # and exactly once more
    assert queue.get("y") is None


def test_a_run_longer_than_its_ttr_keeps_the_next_run_waiting_by_its_heartbeats(
        workers: Workers, queue: sd.Queue) -> None:
    """ttr 1 s, a 3 s run: only the worker's heartbeats (which go on for a run whose job was
    rescheduled) keep the held job from starting at the first lease end."""
    queue.enqueue("slow", {"seconds": 3}, id="long", ttr=1)
    wait_for(lambda: _runs(workers, "long"), 15, "the first run of long")
    assert queue.reschedule("long", delay=0) is True
    (_, first_done), (second, _) = _two_runs(workers, "long")[:2]
    assert first_done is not None and second.t >= first_done.t, (
        f"the second run started {first_done.t - second.t:.3f} s before the first ended")


def test_the_next_run_waits_for_the_lease_of_a_run_whose_worker_died(
        workers: Workers, queue: sd.Queue) -> None:
    queue.enqueue("slow", {"seconds": 60}, id="z", ttr=3)
    (start, _), = wait_for(lambda: _runs(workers, "z"), 15, "the first run of z")
    assert queue.reschedule("z", delay=0) is True
    runner = next(w for w in workers.started if w.pid == start.pid)
    killed = runner.signal(signal.SIGKILL)  # its run never settles: its lease must run out
    runner.wait(10)
    second, _ = wait_for(lambda: (r := _runs(workers, "z")) and len(r) >= 2 and r[1], 30,
                         "the run after the lease")
    assert second.t - start.t >= 2.5, "the next run did not wait for the dead run's lease"
    assert second.t > killed


def test_a_held_job_rescheduled_again_freed_by_the_stale_ack_and_cancelled(
        queue: sd.Queue) -> None:
    """Without workers (a pull consumer holds the delivery): rescheduled twice the job stays
    delayed behind the delivery's lease; the delivery's ack (stale) frees it to its own due time;
    a cancel of a held job removes it while the delivery settles by itself."""
    keys = PartitionKeys(queue.name, 0)

    def promote(expected: int = 1) -> None:
        async def run() -> None:
            dispatcher = sd.Dispatcher(queue.config)
            await promote_due(dispatcher, keys, expected)
            await dispatcher.client.aclose()
        asyncio.run(run())

    def promote_once() -> int:
        async def run() -> int:
            dispatcher = sd.Dispatcher(queue.config)
            moved = (await dispatcher.promote_once(keys)).moved
            await dispatcher.client.aclose()
            return moved
        return asyncio.run(run())

    for job_id in ("h", "k"):
        queue.enqueue("t", job_id, id=job_id, ttr=30)
    promote(expected=2)
    taken = {r.id: r for r in queue.reserve("t", count=2)}
    assert queue.reschedule("h", delay=0) is True
    assert queue.reschedule("h", delay=0.01) is True  # again: still held by the same delivery
    info = queue.get("h")
    held = queue.client.zscore(keys.delayed, "h")
    assert info is not None and info.state == "delayed" and held is not None
    assert held >= info.due + 25_000  # behind the running delivery's 30 s lease
    assert promote_once() == 0
    assert queue.client.hlen(keys.prefix + "holds") == 1
    with pytest.raises(sd.StaleReceipt):  # the job moved on: this delivery is no longer current
        taken["h"].ack()  # but the run settled: the next run may start now
    assert queue.client.zscore(keys.delayed, "h") == info.due
    holds = keys.prefix + "holds"  # the index of held deliveries (lua/includes/hold.lua)
    assert queue.client.hlen(holds) == 0  # h's entry went with its hold
    promote()
    assert queue.get("h").state == "ready"  # type: ignore[union-attr]
    assert queue.reschedule("k", delay=0) is True
    assert queue.cancel("k") is True
    assert queue.get("k") is None
    with pytest.raises(sd.StaleReceipt):
        taken["k"].ack()  # only settles the delivery: the job is gone
    assert queue.get("k") is None and queue.client.zscore(keys.delayed, "k") is None
    assert 0 < queue.client.pttl(holds) <= 30_000 + 60_000 + 1000  # k's entry leaves with it


def test_a_foreign_value_at_the_holds_key_is_refused_before_any_write(queue: sd.Queue) -> None:
    """Only a call that may hold a job (its record has an entry) needs the holds key."""
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", 1, id="f", ttr=30)
    queue.enqueue("t", 1, id="other", delay=60)

    async def promote() -> None:
        dispatcher = sd.Dispatcher(queue.config)
        await promote_due(dispatcher, keys)
        await dispatcher.client.aclose()

    asyncio.run(promote())
    assert [r.id for r in queue.reserve("t")] == ["f"]
    queue.client.set(keys.prefix + "holds", "garbage")
    with pytest.raises(sd.StreamdelayError, match="holds a string"):
        queue.reschedule("f", delay=5)
    with pytest.raises(sd.StreamdelayError, match="holds a string"):
        queue.enqueue("t", 2, id="f", replace=True)
    info = queue.get("f")
    assert info is not None and (info.state, info.body) == ("reserved", 1)
    assert queue.reschedule("other", delay=5)  # a delayed job: the key is not touched
    assert queue.client.get(keys.prefix + "holds") == b"garbage"
    queue.client.delete(keys.prefix + "holds")
