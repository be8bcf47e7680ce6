"""Scale-out on a real local Redis Cluster (3 primaries): partitions spread over the nodes, every
operation routes to the right node without CROSSSLOT errors, scripts come back after SCRIPT FLUSH,
and producers and workers must agree on the partition count."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from redis.cluster import key_slot

import streamdelay as sd
from streamdelay.dispatch.dispatcher import Dispatcher
from streamdelay.protocol.keys import partition_of
from streamdelay.protocol.scripts import script
from tests.support.apps.reliability_app import Workers, count, wait_for
from tests.support.cluster import (
    AFTER_FAILOVER,
    LocalCluster,
    error_stats,
    failover_under_load,
    is_primary,
    keys_per_node,
    replica_of,
    spread_queue_name,
)
from tests.support.failover_window import failover_with_stalled_replica
from tests.support.redis_server import RedisServer
from tests.system.chaos.cluster_run import migrate_slot

PARTITIONS = 8




def run_until_idle(queue: sd.Queue, handler: object, **options: object) -> None:
    """A worker on ``queue`` with ``handler`` for topic ``t``, run until nothing is left."""
    worker = sd.Worker(queue, concurrency=16, reclaim_interval=0.2, **options)  # type: ignore[arg-type]
    worker.handler("t")(handler)  # type: ignore[type-var]
    worker.run(until_idle=True)


@pytest.mark.core
def test_core_flow_spreads_over_every_node(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    queue = sd.Queue(name, url=cluster.url, partitions=PARTITIONS, ttr=5)
    results = queue.enqueue_many(
        [sd.JobSpec("t", {"i": i}, id=f"job-{i}", delay=0.05 * (i % 5)) for i in range(200)])
    assert all(r.created for r in results) and len({r.id for r in results}) == 200
    assert not queue.enqueue("t", {"i": 0}, id="job-0").created  # idempotent across partitions
    queue.enqueue("t", {"late": True}, id="later", delay=3600)
    queue.enqueue("t", {"cancel": True}, id="cancelled", delay=3600)
    queue.enqueue("t", {"fail": True}, id="doomed", max_attempts=1)

    per_node = keys_per_node(cluster, f"sd:{{{name}#*")
    assert len(per_node) == 3 and all(count > 0 for count in per_node.values()), per_node
    assert queue.cancel("cancelled") and queue.get("cancelled") is None
    assert queue.reschedule("later", delay=0.1)
    info = queue.get("job-7")
    assert info is not None and info.state == "delayed" and info.body == {"i": 7}
    assert queue.stats().topics["t"].delayed == 202

    handled: list[str] = []

    def handle(job: sd.Job) -> None:
        if job.id == "doomed" and job.body.get("fail"):
            raise RuntimeError("boom")
        handled.append(job.id)

    run_until_idle(queue, handle)
    assert sorted(handled) == sorted([*(r.id for r in results), "later"])
    assert [d.id for d in queue.dead_list()] == ["doomed"]
    # the worker's consumer is in the fleet record (docs/keys.md#fleet): migrate may move
    assert queue.migrate() == [1] * PARTITIONS and queue.migrate() == [2] * PARTITIONS
    assert queue.dead_replay(id="doomed") == 1
    run_until_idle(queue, lambda job: handled.append(job.id))
    assert handled[-1] == "doomed" and len(handled) == 202
    stats = queue.stats().topics["t"]
    assert (stats.delayed, stats.ready, stats.reserved, stats.dead) == (0, 0, 0, 0)
    assert queue.claim("workers").moved == []
    for node in cluster.primaries():
        assert "errorstat_CROSSSLOT" not in error_stats(node)
    queue.close()


def test_killed_worker_jobs_are_reclaimed_on_every_node(
    cluster: LocalCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delivery guarantee on a cluster: kill -9 a worker mid-jobs, another finishes them."""
    name = spread_queue_name(cluster, PARTITIONS)
    monkeypatch.setenv("STREAMDELAY_PARTITIONS", str(PARTITIONS))  # the worker processes' Queue
    workers = Workers(cluster.url, name, tmp_path)
    queue = sd.Queue(name, url=cluster.url, partitions=PARTITIONS)
    try:
        first = workers.start("a", "--ttr", "2")
        first.wait_ready()
        ids = [r.id for r in queue.enqueue_many(
            [sd.JobSpec("slow", {"seconds": 30}, id=f"k{i}", ttr=2) for i in range(24)])]
        wait_for(lambda: len(count(workers.events(), "start", first.pid)) == 24, 30,
                 "24 starts on a")
        second = workers.start("b", "--sleep-cap", "0.2", "--reclaim", "0.3")
        second.wait_ready()
        first.signal(signal.SIGKILL)
        wait_for(lambda: len(count(workers.events(), "done", second.pid)) == 24, 30,
                 "24 jobs done on b")
        on_second = [e.id for e in workers.events() if e.pid == second.pid and e.ev == "start"]
        assert sorted(on_second) == sorted(ids)  # each exactly once on the survivor
        partitions_used = {partition_of(job_id, PARTITIONS) for job_id in ids}
        assert len(partitions_used) > 4
        assert all(queue.get(job_id) is None for job_id in ids)
    finally:
        workers.stop_all()
        queue.close()


def test_async_queue_sends_partition_calls_concurrently(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)

    async def produce() -> tuple[list[sd.EnqueueResult], sd.QueueStats, sd.JobInfo | None]:
        async with sd.AsyncQueue(name, url=cluster.url, partitions=PARTITIONS) as queue:
            results = await queue.enqueue_many(
                [sd.JobSpec("t", i, id=f"a{i}", delay=60) for i in range(1200)])
            return results, await queue.stats(), await queue.get("a1199")

    results, stats, info = asyncio.run(produce())
    assert len(results) == 1200 and all(r.created for r in results)
    assert stats.topics["t"].delayed == 1200
    assert info is not None and info.body == 1199


def test_a_new_dispatcher_routes_its_first_commands_without_moved(cluster: LocalCluster) -> None:
    """redis-py 8.1 routes a new asyncio cluster client's first command before it knows the
    slot map: it went to an arbitrary node (MOVED), and a burst of those made the client drop
    its connections and resend scripts that had run, so the promoted count fell short."""
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as queue:
        queue.enqueue_many([sd.JobSpec("t", i, id=f"m{i}") for i in range(3000)])
        config = queue.config
    for node in cluster.primaries():
        with node.client() as client:
            client.config_resetstat()

    async def promote_all() -> int:
        dispatcher = Dispatcher(config)
        task = asyncio.ensure_future(dispatcher.run())
        for _ in range(200):
            if dispatcher.promoted >= 3000:
                break
            await asyncio.sleep(0.05)
        dispatcher.stop()
        await task
        await dispatcher.close()
        return dispatcher.promoted

    promoted = asyncio.run(promote_all())
    moved = [error_stats(node).get("errorstat_MOVED") for node in cluster.primaries()]
    assert moved == [None, None, None], moved
    assert promoted == 3000  # each job's move reported once: no reply lost, no call resent
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as queue:
        topic = queue.stats().topics["t"]
    assert (topic.delayed, topic.ready) == (0, 3000)


@pytest.mark.core
def test_scripts_come_back_after_flush_on_every_node(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    queue = sd.Queue(name, url=cluster.url, partitions=PARTITIONS)
    queue.enqueue("t", 0, id="warm-up")
    for node in cluster.primaries():
        with node.client() as client:
            client.script_flush()
    results = queue.enqueue_many([sd.JobSpec("t", i, id=f"s{i}") for i in range(64)])
    assert all(r.created for r in results)
    sha = script("enqueueJobs").sha
    for node in cluster.primaries():  # reloaded on every primary, not only the one that failed
        with node.client() as client:
            assert client.script_exists(sha) == [True]
            client.script_flush()
    seen: list[str] = []
    run_until_idle(queue, lambda job: seen.append(job.id))  # worker and dispatcher reload too
    assert sorted(seen) == sorted(["warm-up", *(r.id for r in results)])
    queue.close()


def test_partition_count_mismatch_is_refused(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as producer:
        producer.enqueue("t", 1, id="x")
    for other in (1, 4, 16):
        with sd.Queue(name, url=cluster.url, partitions=other) as wrong:
            with pytest.raises(sd.ConfigError, match="partitions") as caught:
                wrong.get("x")
            assert caught.value.field == "partitions"
    worker = sd.Worker(sd.Queue(name, url=cluster.url, partitions=2))
    worker.handler("t")(lambda job: None)
    with pytest.raises(sd.ConfigError, match="partitions=8"):
        worker.run(until_idle=True)


def test_partition_count_mismatch_is_refused_on_one_server(own_redis: RedisServer) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"
    with sd.Queue(name, url=own_redis.url, partitions=3) as producer:
        producer.enqueue("t", 1, id="x")
    with sd.Queue(name, url=own_redis.url) as wrong, pytest.raises(sd.ConfigError) as caught:
        wrong.enqueue("t", 2)
    assert caught.value.field == "partitions" and "partitions=3" in str(caught.value)


def test_cli_commands_take_a_cluster_url(cluster: LocalCluster) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "streamdelay", *args, "--url", cluster.url],
                              capture_output=True, text=True, timeout=60)

    enqueued = cli("enqueue", name, "t", '{"a": 1}', "--id", "c1", "--delay", "1h")
    assert enqueued.returncode == 0, enqueued.stderr
    shown = cli("get", name, "c1", "--json")
    assert shown.returncode == 0 and '"delayed"' in shown.stdout, shown.stderr
    assert cli("cancel", name, "c1").returncode == 0
    assert cli("get", name, "c1").returncode == 1


@pytest.mark.parametrize("url", [
    "redis+cluster://", "redis+cluster://host", "redis+cluster://h:1,h2", "redis+cluster://h:1/3",
    "redis+cluster://h:1?bogus=1", "redis+sentinel://h:26379", "redis+sentinel://h:1/m/x",
    "redis+sentinel://h:1/m/0/9", "memcached://h:1",
])
def test_malformed_topology_urls_are_refused(url: str) -> None:
    with pytest.raises(sd.StreamdelayError) as caught:
        sd.Queue("q", url=url)
    assert caught.value.field == "url"


def test_cluster_failover_under_load_loses_nothing_enqueued_after_it(tmp_path: Path) -> None:
    with LocalCluster(primaries=3, replicas=1, node_timeout_ms=1000) as local:
        name = spread_queue_name(local, PARTITIONS)
        victim = local.owner_of(f"sd:{{{name}#0}}:jobs")
        heir = replica_of(local, victim)
        report = failover_under_load(
            local.url, name, PARTITIONS, tmp_path, kill=victim.kill,
            promoted=lambda: is_primary(heir) and local.healthy())
    print(f"cluster failover: {report.summary()}")
    assert report.producer_errors == []
    assert report.accepted_after >= AFTER_FAILOVER  # enqueues go on after it (a count)
    assert report.lost_after == []  # lost_before is reported: the async replication window


def test_schedules_fire_on_a_cluster(cluster: LocalCluster) -> None:
    """Each schedule and its ticks share one slot (docs/schedules.md#storage): the scripts that
    enqueue a tick and advance the schedule run on the node of the schedule's partition."""
    name = spread_queue_name(cluster, PARTITIONS)
    queue = sd.Queue(name, url=cluster.url, partitions=PARTITIONS)
    names = [f"s{i}" for i in range(6)]
    for schedule in names:
        assert queue.schedule(schedule, "t", {"s": schedule}, every=1)
    assert len({partition_of(f"{s}@0", PARTITIONS) for s in names}) > 2

    async def dispatch() -> None:
        dispatcher = Dispatcher(queue.config, safety_tick=0.5)
        running = asyncio.create_task(dispatcher.run())
        await asyncio.sleep(3.5)
        dispatcher.stop()
        await running
        await dispatcher.close()

    asyncio.run(dispatch())
    for schedule in names:
        queue.pause_schedule(schedule)
        ticks = sorted(int(job.id.split("@")[1]) for job in queue.jobs("ready", topic="t",
                                                                       limit=1000).jobs
                       if job.id.startswith(f"{schedule}@"))
        assert len(ticks) >= 2 and ticks == list(range(ticks[0], ticks[-1] + 1, 1000))
        assert queue.get(f"{schedule}@{ticks[0]}") is not None
    assert all(s.paused for s in queue.schedules())
    queue.close()
@pytest.mark.parametrize("replicas", [1, 0])
def test_failover_with_a_stalled_replica_loses_nothing_acknowledged_with_replicas_1(
    replicas: int, record_property: pytest.RecordProperty,
) -> None:
    """docs/guarantees.md#durability on a cluster: ``WAIT`` rides the connection to the node
    that took the write; with ``replicas=1`` nothing acknowledged before the kill is lost,
    ``replicas=0`` shows the window (recorded, not asserted away)."""
    with LocalCluster(primaries=3, replicas=1, node_timeout_ms=1000) as local:
        if replicas:  # durable calls spread over every node: one pipeline + WAIT per node
            spread = spread_queue_name(local, PARTITIONS)
            with sd.Queue(spread, url=local.url, partitions=PARTITIONS, replicas=1,
                          replica_timeout=5) as queue:
                results = queue.enqueue_many([sd.JobSpec("t", i, id=f"s{i}", delay=60)
                                              for i in range(400)])
                assert all(r.created for r in results) and queue.cancel("s1")
                # the slot moves while this client's map is stale: MOVED, refresh, retried
                jobs_key = f"sd:{{{spread}#0}}:jobs"
                home = local.owner_of(jobs_key)
                away = next(n for n in local.primaries() if n is not home)
                migrate_slot(local, key_slot(jobs_key.encode()), home, away)
                moved_id = next(f"m{i}" for i in range(1000)
                                if partition_of(f"m{i}", PARTITIONS) == 0)
                redirected = error_stats(home).get("errorstat_MOVED", "count=0")
                assert queue.enqueue("t", 1, id=moved_id, delay=60).created
                assert error_stats(home).get("errorstat_MOVED") != redirected  # it was sent
                assert local.owner_of(jobs_key) is away
                with replica_of(local, away).client() as follower:
                    follower.execute_command("READONLY")  # read the replica's own copy
                    assert follower.hexists(jobs_key, moved_id)

            async def concurrent() -> list[sd.EnqueueResult]:
                async with sd.AsyncQueue(spread, url=local.url, partitions=PARTITIONS,
                                         replicas=1, replica_timeout=5) as aqueue:
                    found = await asyncio.gather(*(aqueue.enqueue("t", i, id=f"a{i}", delay=60)
                                                   for i in range(100)))
                    assert await aqueue.cancel("a1") and await aqueue.reschedule("a2", delay=9)
                    return list(found)

            assert all(r.created for r in asyncio.run(concurrent()))
        name = f"q{uuid.uuid4().hex[:8]}"
        victim = local.owner_of(f"sd:{{{name}#0}}:jobs")
        heir = replica_of(local, victim)
        report = failover_with_stalled_replica(
            local.url, name, replicas, victim, heir,
            promoted=lambda: is_primary(heir) and local.healthy())
    print(f"cluster failover, stalled replica: {report.summary()}")
    record_property("failover_window", report.summary())
    assert report.other_errors == []
    assert report.acknowledged > 20 and not report.cancel_before_ran
    if replicas:
        assert report.found_on_promoted == report.acknowledged  # on the replica that took over
        assert report.lost_before == []
        assert report.unconfirmed > 0 and report.cancel_during == "not durable"
        assert not report.cancel_during_ran
