"""The pull API on a real local Redis Cluster (3 primaries, 8 partitions): reserve reads every
partition without a CROSSSLOT error, a blocking wait finds a job in any partition (in turns), and
ack / fail / touch route to the right node, sync and async."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

import streamdelay as sd
from tests.integration.test_pull import running_dispatcher
from tests.support.cluster import LocalCluster, error_stats, spread_queue_name

PARTITIONS = 8
pytestmark = pytest.mark.timeout(120)




def test_reserve_on_a_cluster(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS, backoff=[0]) as q, \
            running_dispatcher(q):
        q.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(40)])
        taken: list[sd.Reservation] = []
        deadline = time.monotonic() + 30
        while len(taken) < 40 and time.monotonic() < deadline:
            taken.extend(q.reserve("t", count=100, wait=1))
        assert sorted(r.body for r in taken) == list(range(40))
        for r in taken[:30]:
            r.touch()
            r.ack()
        for r in taken[30:]:
            assert r.fail("again") == "retried"
        again: list[sd.Reservation] = []
        while len(again) < 10 and time.monotonic() < deadline:
            again.extend(q.reserve("t", count=100, wait=1))
        assert sorted(r.attempt for r in again) == [2] * 10
        for r in again:
            q.reservation(r.receipt).ack()

        async def wait_for_one() -> tuple[str, float]:
            async with sd.AsyncQueue(name, url=cluster.url, partitions=PARTITIONS) as aq:
                await aq.enqueue("t", "late", id="late", delay=0.6)
                began = time.monotonic()
                [r] = await aq.reserve("t", wait=10)
                await r.ack()
                return r.id, time.monotonic() - began

        job_id, waited = asyncio.run(wait_for_one())
        assert job_id == "late" and 0.5 <= waited < 9
        row = q.stats().topics["t"]
        assert (row.delayed, row.ready, row.reserved, row.dead) == (0, 0, 0, 0)
    for node in cluster.primaries():
        assert "errorstat_CROSSSLOT" not in error_stats(node)


def test_one_partition_reserve_pipelines_its_checks_on_a_cluster(cluster: LocalCluster) -> None:
    """A queue of one partition on a cluster: the one-round-trip read (the pause flag, the
    limit, ``XREADGROUP`` and the pause flag in one pipeline, docs/pull.md) goes to the node of
    the queue's slot, sync and async, and a pause still holds."""
    name = f"q{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=cluster.url, backoff=[0]) as q, running_dispatcher(q):
        q.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(6)])
        taken: list[sd.Reservation] = []
        deadline = time.monotonic() + 30
        while len(taken) < 3 and time.monotonic() < deadline:  # later rounds: one pipeline
            taken.extend(q.reserve("t", wait=1))
        assert len(taken) == 3
        for r in taken:
            r.ack()
        assert q.pause("t")
        assert q.reserve("t", wait=0.3) == []

        async def take_rest() -> list[str]:
            async with sd.AsyncQueue(name, url=cluster.url) as aq:
                assert await aq.reserve("t") == []  # paused
                await aq.resume("t")
                got: list[str] = []
                while len(got) < 3 and time.monotonic() < deadline:
                    for r in await aq.reserve("t", wait=1):
                        got.append(r.id)
                        await r.ack()
                return got

        assert len(asyncio.run(take_rest())) == 3
    for node in cluster.primaries():
        assert "errorstat_CROSSSLOT" not in error_stats(node)


def test_expired_jobs_never_run_on_a_cluster(cluster: LocalCluster) -> None:
    """Expiry (docs/expiry.md#clocks) on 3 primaries and 8 partitions: jobs promoted in time
    whose deadline passes in their streams are never handed to a worker's handler (its blocking
    reads pipeline TIME, which a cluster may answer from another node) nor to ``reserve``;
    jobs expired while delayed are dead-lettered by the dispatcher. All dead with ``expired``."""
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS, backoff=[0]) as q:
        q.enqueue_many([sd.JobSpec("t", i, id=f"late{i}", expires=0.3) for i in range(16)]
                       + [sd.JobSpec("t", i, id=f"ok{i}", expires=60) for i in range(16)])
        with running_dispatcher(q):  # promoted in time (or, on a slow machine, expired)
            deadline = time.monotonic() + 30
            while q.stats().topics["t"].delayed and time.monotonic() < deadline:
                time.sleep(0.05)
        q.enqueue_many([sd.JobSpec("t", i, id=f"delayed{i}", expires=0.3) for i in range(8)])
        time.sleep(0.6)
        ran: list[str] = []
        for r in q.reserve("t", group="workers", count=8, wait=1):  # the pull driver
            ran.append(r.id)
            r.ack()
        assert ran and all(job_id.startswith("ok") for job_id in ran)
        worker = sd.Worker(q, concurrency=4)
        worker.handler("t")(lambda job: ran.append(job.id))
        worker.run(until_idle=True)
        assert sorted(ran) == sorted(f"ok{i}" for i in range(16))
        dead = {d.id: d.error for d in q.dead_list("t", limit=100)}
        assert dead == {**{f"late{i}": "expired" for i in range(16)},
                        **{f"delayed{i}": "expired" for i in range(8)}}
