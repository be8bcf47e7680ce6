"""Sentinel: the same API and CLI through ``redis+sentinel://``, and a real failover under load
(kill -9 of the master; the replica is promoted; workers and dispatchers carry on by themselves)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.cluster import AFTER_FAILOVER, LocalSentinel, failover_under_load
from tests.support.failover_window import failover_with_stalled_replica


@pytest.fixture(scope="module")
def sentinel() -> Iterator[LocalSentinel]:
    """A master, a replica and a Sentinel shared by the basic tests of this module."""
    with LocalSentinel() as local:
        yield local


def test_core_flow_through_sentinel(sentinel: LocalSentinel) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"
    queue = sd.Queue(name, url=sentinel.url, partitions=4)
    results = queue.enqueue_many([sd.JobSpec("t", i, id=f"s{i}", delay=0.01 * i)
                                  for i in range(50)])
    assert all(r.created for r in results)
    queue.enqueue("t", "x", id="gone", delay=3600)
    queue.enqueue("t", "y", id="moved", delay=3600)
    assert queue.cancel("gone") and queue.reschedule("moved", delay=0)
    assert queue.stats().topics["t"].delayed == 51
    seen: list[str] = []
    worker = sd.Worker(queue, concurrency=8)
    worker.handler("t")(lambda job: seen.append(job.id))
    worker.run(until_idle=True)
    assert sorted(seen) == sorted([*(r.id for r in results), "moved"])
    with sentinel.replica.client() as replica:  # the data really lives on the watched master
        assert replica.exists(f"sd:{{{name}#0}}:meta")

    async def read_back() -> sd.JobInfo | None:
        async with sd.AsyncQueue(name, url=sentinel.url, partitions=4) as aqueue:
            await aqueue.enqueue("t", {"async": True}, id="a1", delay=60)
            return await aqueue.get("a1")

    info = asyncio.run(read_back())
    assert info is not None and info.body == {"async": True}
    with sd.Queue(f"{name}-one", url=sentinel.url) as single:
        single.enqueue("t", {"cli": True}, id="c1", delay=60)
    shown = subprocess.run([sys.executable, "-m", "streamdelay", "get", f"{name}-one", "c1",
                            "--json", "--url", sentinel.url], capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0 and '"body":{"cli":true}' in shown.stdout, shown.stderr
    queue.close()


def test_failover_under_load_loses_nothing_enqueued_after_it(tmp_path: Path) -> None:
    with LocalSentinel(down_after_ms=500) as local:
        report = failover_under_load(
            local.url, f"q{uuid.uuid4().hex[:8]}", 1, tmp_path, kill=local.master.kill,
            promoted=lambda: local.master_port() == local.replica.port)
    print(f"sentinel failover: {report.summary()}")
    assert report.producer_errors == []
    assert report.accepted_after >= AFTER_FAILOVER  # enqueues go on after it (a count)
    assert report.lost_after == []  # lost_before is reported: the async replication window


@pytest.mark.parametrize("replicas", [1, 0])
def test_failover_with_a_stalled_replica_loses_nothing_acknowledged_with_replicas_1(
    replicas: int, record_property: pytest.RecordProperty,
) -> None:
    """docs/guarantees.md#durability: with ``replicas=1`` no job acknowledged before the kill
    is lost and an acknowledged cancel holds; ``replicas=0`` shows the window (recorded)."""
    with LocalSentinel(down_after_ms=500) as local:
        report = failover_with_stalled_replica(
            local.url, f"q{uuid.uuid4().hex[:8]}", replicas, local.master, local.replica,
            promoted=lambda: local.failed_over_to(local.replica), rejoin_as_replica=True)
    print(f"sentinel failover, stalled replica: {report.summary()}")
    record_property("failover_window", report.summary())
    assert report.other_errors == []
    assert report.acknowledged > 20 and not report.cancel_before_ran
    if replicas:
        assert report.found_on_promoted == report.acknowledged  # on the replica that took over
        assert report.lost_before == []
        assert report.unconfirmed > 0 and report.cancel_during == "not durable"
        assert not report.cancel_during_ran
