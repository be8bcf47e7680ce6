"""Workflows under real failures (docs/workflows.md#guarantees): two worker processes complete
a batch's members concurrently, one is killed with kill -9 in the middle of the batch, and the
batch's callbacks are enqueued exactly once; a chain across partitions keeps its order. On one
server with 3 partitions, and on a real 3-primary Redis Cluster with the slot of the batch's
partition migrated to another node in the middle of the batch, and through Sentinel
(docs/workflows.md#guarantees-and-costs: a migration while that partition's jobs end at full
speed is not covered)."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from redis.cluster import key_slot

import streamdelay as sd
from streamdelay.client.flow_plans import batch_home
from streamdelay.protocol.keys import PartitionKeys
from tests.support.apps.reliability_app import Workers, count, wait_for
from tests.support.cluster import LocalCluster, LocalSentinel, error_stats, spread_queue_name
from tests.support.redis_server import RedisServer
from tests.system.chaos.cluster_run import migrate_slot

pytestmark = pytest.mark.timeout(240)
PARTITIONS = 3


def scenario(url: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             during: Callable[[], None] | None = None) -> None:
    """Batch ``bx`` (10 slow members a worker is killed in, then 200 fast ones two workers
    race on), and a chain of 15: every callback exactly once, the chain in order."""
    monkeypatch.setenv("STREAMDELAY_PARTITIONS", str(PARTITIONS))
    workers = Workers(url, name, tmp_path)
    queue = sd.Queue(name, url=url, partitions=PARTITIONS, ttr=2)  # reclaimed 2 s after the kill
    try:
        first = workers.start("a", "--ttr", "2")
        first.wait_ready()
        slow = [sd.JobSpec("slow", {"seconds": 30}, id=f"s{i}", ttr=2) for i in range(10)]
        opened = queue.batch(slow, id="bx", close=False, on_success=sd.JobSpec("fast", id=None),
                             on_complete=sd.JobSpec("fast", {"complete": True}))
        assert opened.state == "open" and opened.on_success == "bx@1"
        wait_for(lambda: len(count(workers.events(), "start", first.pid)) == 10, 30,
                 "10 slow members started on a")
        if during is not None:  # mid-batch: members running, their links and the batch stored
            during()
        second = workers.start("b", "--sleep-cap", "0.2", "--reclaim", "0.3")
        second.wait_ready()
        chain = [f"ch{i}" for i in range(15)]
        queue.chain([sd.JobSpec("fast", id=c) for c in chain])
        fast = [sd.JobSpec("fast", id=f"f{i}") for i in range(200)]
        assert queue.batch(fast, id="bx").state == "running"  # closes it
        wait_for(lambda: len(count(workers.events(), "done")) >= 20, 30, "20 fast jobs done")
        first.signal(signal.SIGKILL)
        wait_for(lambda: {"bx@1", "bx@2"} <= set(count(workers.events(), "done")), 60,
                 "both callbacks done")
        wait_for(lambda: set(chain) <= set(count(workers.events(), "done")), 60, "the chain")
        info = queue.batch_info("bx")
        assert info is not None
        assert (info.total, info.succeeded, info.dead, info.state) == (210, 210, 0, "done")
        events = workers.events()
        done = count(events, "done")
        assert done["bx@1"] == 1 and done["bx@2"] == 1
        order = [e.id for e in events if e.ev == "done" and e.id in chain]
        firsts = list(dict.fromkeys(order))
        assert firsts == chain  # each link after the one before
        assert queue.get("bx@1") is None and queue.get("bx@2") is None  # ran and acked
        for p in range(PARTITIONS):
            assert queue.client.xlen(PartitionKeys(name, p).prefix + "outbox") == 0
    finally:
        workers.stop_all()
        queue.close()


def test_callbacks_exactly_once_with_a_worker_killed_mid_batch(
        own_redis: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario(own_redis.url, f"wf{uuid.uuid4().hex[:8]}", tmp_path, monkeypatch)


def test_callbacks_exactly_once_on_a_cluster_with_a_slot_migration(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCluster(primaries=3) as cluster:
        name = spread_queue_name(cluster, PARTITIONS)
        home = batch_home("bx", PARTITIONS)  # the batch's record, members' links, callbacks
        home_key = PartitionKeys(name, home).jobs
        notes: list[str] = []

        def migrate() -> None:
            source = cluster.owner_of(home_key)
            target = next(n for n in cluster.primaries() if n is not source)
            notes.append(migrate_slot(cluster, key_slot(home_key.encode()), source, target))
            assert cluster.owner_of(home_key) is target, notes[-1]

        scenario(cluster.url, name, tmp_path, monkeypatch, during=migrate)
        assert notes and "keys" in notes[0], notes
        for node in cluster.primaries():
            assert "errorstat_CROSSSLOT" not in error_stats(node)


def test_workflows_through_sentinel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run against a Sentinel-managed primary (a sentinel:// URL)."""
    with LocalSentinel() as sentinel:
        scenario(sentinel.url, f"wf{uuid.uuid4().hex[:8]}", tmp_path, monkeypatch)
