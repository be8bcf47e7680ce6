"""Durability on a cluster (docs/guarantees.md#durability-across-failover): the retry of a
``NotDurable`` call from another connection writes nothing, and its ``WAIT`` must still cover the
first call's write. A real 3-primary cluster with one replica each (the smallest shape
``redis-cli --cluster create`` accepts); the replica of the partition's node is stopped with
SIGSTOP so it acknowledges nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import key_slot

import streamdelay as sd
from tests.cluster import LocalCluster, replica_of, spread_queue_name
from tests.redis_server import RedisServer, wait_until

WAIT_S = 0.3  # replica_timeout while the replica is stalled
PARTITIONS = 8


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """3 primaries with one replica each, for this module."""
    with LocalCluster(primaries=3, replicas=1, node_timeout_ms=5000) as local:
        yield local


def _stall(replica: RedisServer) -> None:
    assert replica.process is not None
    os.kill(replica.process.pid, signal.SIGSTOP)


def _caught_up(primary: RedisServer) -> None:
    """Wait until the replica of ``primary`` acknowledges a fresh write on it (right after the
    cluster formed, a replica may take a moment: the warm-up writes must be confirmed within
    ``WAIT_S``). The write is needed: a connection that wrote nothing waits for nothing."""
    with primary.client() as client:
        probe = next(f"probe{i}" for i in range(10_000)
                     if key_slot(f"probe{i}".encode()) in _slots(client))

        def acked() -> bool:
            client.set(probe, "")
            return int(client.execute_command("WAIT", 1, 100)) >= 1

        assert wait_until(acked, timeout=10)


def _slots(client: redis.Redis) -> set[int]:
    """The slots ``client``'s node serves."""
    me = int(client.connection_pool.connection_kwargs["port"])
    return {slot for start, end, owner, *_ in client.execute_command("CLUSTER SLOTS")
            if int(owner[1]) == me for slot in range(start, end + 1)}


def _resume(replica: RedisServer, primary: RedisServer) -> None:
    assert replica.process is not None
    os.kill(replica.process.pid, signal.SIGCONT)
    _caught_up(primary)


@pytest.mark.core
def test_a_retry_from_another_connection_still_waits_for_the_first_write_on_a_cluster(
    cluster: LocalCluster,
) -> None:
    """The cluster version of tests/test_durability.py's single-server test: the retries from
    another queue (another connection to the same node; sync and asyncio) find the job written
    already, or gone, and write nothing; each must still raise ``NotDurable`` while the first
    write has not reached the stalled replica."""
    name = f"q{uuid.uuid4().hex[:8]}"
    node = cluster.owner_of(f"sd:{{{name}#0}}:jobs")
    replica = replica_of(cluster, node)
    _caught_up(node)
    options: dict[str, object] = {"url": cluster.url, "replicas": 1, "replica_timeout": WAIT_S}
    first = sd.Queue(name, **options)  # type: ignore[arg-type]
    other = sd.Queue(name, **options)  # type: ignore[arg-type]
    other.enqueue("t", 0, id="warm", delay=60)  # the other connection's write, confirmed
    first.enqueue("t", 0, id="gone", delay=60)
    first.enqueue("t", 0, id="gone2", delay=60)

    async def by_first(call: str, *args: object, **kwargs: object) -> None:
        with pytest.raises(sd.NotDurable):  # the first write, on the first queue's connection
            await asyncio.to_thread(getattr(first, call), *args, **kwargs)

    async def retries_async() -> None:
        async with sd.AsyncQueue(name, **options) as aqueue:  # type: ignore[arg-type]
            await aqueue.enqueue("t", 0, id="warm-async", delay=60)
            _stall(replica)
            await by_first("enqueue", "t", 1, id="y", delay=60)
            with pytest.raises(sd.NotDurable):
                await aqueue.enqueue("t", 1, id="y", delay=60)  # created=False
            await by_first("cancel", "gone2")
            with pytest.raises(sd.NotDurable):
                await aqueue.cancel("gone2")  # found nothing: nothing written

    try:
        _stall(replica)
        try:
            with pytest.raises(sd.NotDurable):
                first.enqueue("t", 1, id="x", delay=60)
            with pytest.raises(sd.NotDurable):
                other.enqueue("t", 1, id="x", delay=60)  # created=False: nothing written
            with pytest.raises(sd.NotDurable):
                first.cancel("gone")
            with pytest.raises(sd.NotDurable):
                other.cancel("gone")  # found nothing: nothing written
        finally:
            _resume(replica, node)
        try:
            asyncio.run(retries_async())
        finally:
            _resume(replica, node)
        assert not other.enqueue("t", 1, id="x", delay=60).created
        assert other.get("gone") is None and other.get("gone2") is None
        assert other.get("y") is not None
    finally:
        first.close()
        other.close()


@pytest.mark.core
def test_durable_calls_load_flushed_scripts_on_every_node_without_eval(
    cluster: LocalCluster,
) -> None:
    """After ``SCRIPT FLUSH`` on every primary, durable calls over every node (sync and asyncio)
    load their scripts with ``SCRIPT LOAD`` and run them by ``EVALSHA``: never ``EVAL``, which
    the documented ACL does not grant (docs/security.md), and each node's fence key is there."""
    name = spread_queue_name(cluster, PARTITIONS)
    options: dict[str, object] = {"url": cluster.url, "partitions": PARTITIONS, "replicas": 1,
                                  "replica_timeout": 5}
    with sd.Queue(name, **options) as queue:  # type: ignore[arg-type]
        queue.enqueue("t", 0, id="first", delay=60)  # the queue exists, its scripts loaded
        for node in cluster.primaries():
            _caught_up(node)
            with node.client() as client:
                client.script_flush()
                client.config_resetstat()
        assert all(r.created for r in queue.enqueue_many(
            [sd.JobSpec("t", i, id=f"s{i}", delay=60) for i in range(40)]))

        async def concurrent() -> list[sd.EnqueueResult]:
            for node in cluster.primaries():
                with node.client() as client:
                    client.script_flush()
            async with sd.AsyncQueue(name, **options) as aqueue:  # type: ignore[arg-type]
                return list(await asyncio.gather(*(aqueue.enqueue("t", i, id=f"a{i}", delay=60)
                                                   for i in range(40))))

        assert all(r.created for r in asyncio.run(concurrent()))
    for node in cluster.primaries():
        with node.client() as client:
            stats = client.info("commandstats")
            assert "cmdstat_eval" not in stats and "cmdstat_script|load" in stats, node.port
            assert any(key.endswith(b":durable") for key in client.keys(f"sd:{{{name}#*"))
