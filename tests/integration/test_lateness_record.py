"""The lateness record the dashboard reads (docs/dashboard.md#lateness): the recordLateness /
readLateness scripts on a real Redis, and a real worker filling it (the pure buckets, quantiles
and windows: tests/unit/test_lateness_record.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from streamdelay.telemetry.lateness import (
    LatenessRecorder,
    bucket_of,
    lateness_plan,
)

# --- pure ----------------------------------------------------------------------------------










# --- the scripts on a real Redis ----------------------------------------------------------------


def test_a_flush_is_applied_once_and_read_back(queue: sd.Queue) -> None:
    rec = LatenessRecorder(queue.name, "w1", keep_s=90)
    rec.observe("mail", 2)
    rec.observe("mail", 2)
    rec.observe("sms", 400)
    call = rec.take()
    assert call is not None
    client = queue.client
    first = drive_sync(client, _one(call), None)
    assert first > 0
    assert drive_sync(client, _one(call), None) == 0  # a retried flush counts nothing twice
    window = drive_sync(client, lateness_plan(queue.name, 3), None)
    assert window.minutes[-1] == first and len(window.minutes) == 3
    assert window.merged("mail")[bucket_of(2)] == 2
    assert window.merged("sms")[bucket_of(400)] == 1
    key = f"{PartitionKeys(queue.name, 0).lateness}:{first}"
    assert 0 < client.ttl(key) <= 90
    seen = f"{PartitionKeys(queue.name, 0).lateness}:seen:{first}"
    assert client.hkeys(seen) == [b"w1"] and 0 < client.ttl(seen) <= 90


def test_short_lived_workers_leave_no_field_behind(queue: sd.Queue) -> None:
    """20 workers that flush once and are gone, next to one that keeps flushing: their
    bookkeeping expires with them (one field per worker instance for ever, before)."""
    client = queue.client
    base = PartitionKeys(queue.name, 0).lateness
    for i in range(20):
        rec = LatenessRecorder(queue.name, f"short-{i}", keep_s=2)
        rec.observe("t", 1)
        call = rec.take()
        assert call is not None and drive_sync(client, _one(call), None) > 0
    steady = LatenessRecorder(queue.name, "steady", keep_s=2)

    def flushers() -> set[str]:
        names: set[str] = set()
        for key in client.scan_iter(match=base + "*"):
            if client.type(key) == b"hash":
                names |= {f.decode() for f in client.hkeys(key)
                          if f.startswith(b"short-") or f == b"steady"}
        return names

    assert len(flushers()) == 20
    for _ in range(8):  # the live worker flushes on, refreshing what it writes
        steady.observe("t", 1)
        call = steady.take()
        assert call is not None and drive_sync(client, _one(call), None) > 0
        time.sleep(0.5)
    assert flushers() <= {"steady"}  # (its own field may be between two hashes)


def test_the_scripts_refuse_bad_arguments_and_wrong_types(queue: sd.Queue) -> None:
    base = PartitionKeys(queue.name, 0).lateness
    client = queue.client
    with pytest.raises(sd.ScriptError, match="BAD_ARGS"):
        drive_sync(client, _one(script("recordLateness").call([base], [60, "w", 1, "t"])), None)
    with pytest.raises(ValueError, match="minutes"):
        drive_sync(client, lateness_plan(queue.name, 0), None)
    client.set(base, "x")
    with pytest.raises(sd.StreamdelayError, match="holds a string"):
        drive_sync(client, _one(script("recordLateness").call([base], [60, "w", 1, "t", 0, 1])),
                   None)
    assert client.get(base) == b"x" and not list(client.scan_iter(match=base + ":*"))


def _one(call: object):  # type: ignore[no-untyped-def]
    reply = yield call
    return reply


# --- a real worker ------------------------------------------------------------------------------


def test_a_worker_records_lateness_of_its_jobs(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(5)])
    worker = sd.Worker(queue, concurrency=2)
    seen: list[str] = []

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        seen.append(job.id)

    asyncio.run(worker.serve(until_idle=True))  # shutdown flushes what the loop had not sent
    assert len(seen) == 5
    window = drive_sync(queue.client, lateness_plan(queue.name, 2), None)
    assert sum(window.merged("t")) == 5




def test_a_worker_records_outcomes_per_minute_in_the_same_flush(queue: sd.Queue) -> None:
    """Throughput for the dashboard: starts are the lateness counts, outcomes ride in the same
    record (fields ``ok:``, ``retried:``, ``dead:``), one flush for all of them."""
    queue.enqueue_many([sd.JobSpec("t", i, id=f"o{i}", max_attempts=1 if i < 2 else 2)
                        for i in range(6)])
    worker = sd.Worker(queue, concurrency=2, block=0.05)
    flushes: list[int] = []
    real_take = worker.reports.record.take

    def counted_take():  # type: ignore[no-untyped-def]
        call = real_take()
        if call is not None:
            flushes.append(1)
        return call

    worker.reports.record.take = counted_take  # type: ignore[method-assign]

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        if job.body < 4 and job.attempt == 1:
            raise RuntimeError("once")

    asyncio.run(worker.serve(until_idle=True))
    window = drive_sync(queue.client, lateness_plan(queue.name, 2), None)
    flow = window.throughput("t")
    # o0, o1: dead at once; o2, o3: retried then ok; o4, o5: ok
    assert (sum(flow["dead"]), sum(flow["retried"]), sum(flow["ok"])) == (2, 2, 4)
    assert sum(flow["started"]) == 8 and len(flushes) <= 2  # no call per job
    assert window.merged("t") and sum(window.merged("t")) == 8  # lateness reads unchanged
