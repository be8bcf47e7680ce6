"""``local_fsync=True`` for real (docs/guarantees.md#durability): ``WAITAOF 1 N`` after every
durable call, on a server that has it. Debian's Redis 7.0 has no WAITAOF, so these run on Valkey
8.1 (``pytest --server valkey``, which ``make test`` runs; tests/conftest.py); on Redis 7.0
tests/test_durability.py checks the refusal instead."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

import streamdelay as sd
from tests.redis_server import RedisServer, wait_until
from tests.test_durability import Pair

pytestmark = pytest.mark.server("valkey")
# WAITAOF 1 1 answers once the replica reports its fsynced offset, which Valkey 8.1 replicas do
# about once a second: ~1 s per call here (docs/guarantees.md#durability), so a timeout above that
AOF_TIMEOUT = 2.0


class AofPair(Pair):
    """A primary and its replica, both with ``appendonly yes`` (``appendfsync always``)."""

    def __init__(self) -> None:
        self.primary = RedisServer(persistent=True).start()
        self.replica = RedisServer("--replicaof", "127.0.0.1", str(self.primary.port),
                                   persistent=True).start()
        with self.replica.client() as client:
            assert wait_until(lambda: client.info("replication")["master_link_status"] == "up")


@pytest.fixture(scope="module")
def aof_pair() -> Iterator[AofPair]:
    """One AOF primary with one AOF replica, shared by this module."""
    servers = AofPair()
    yield servers
    servers.stop()


def _waitaof_calls(server: RedisServer) -> int:
    with server.client() as client:
        return int(client.info("commandstats").get("cmdstat_waitaof", {}).get("calls", 0))


def _confirmed(queue: sd.Queue, job_id: str) -> bool:
    """Enqueue ``job_id`` (again): True once the call is confirmed (a retry is safe)."""
    try:
        queue.enqueue("t", 0, id=job_id, delay=60)
    except sd.NotDurable:
        return False
    return True


def test_local_fsync_waits_for_the_primarys_aof_and_the_replicas(aof_pair: AofPair) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"
    before = _waitaof_calls(aof_pair.primary)
    with sd.Queue(name, url=aof_pair.primary.url, local_fsync=True) as local:  # WAITAOF 1 0
        assert local.enqueue("t", 1, id="a", delay=60).created
    with sd.Queue(name, url=aof_pair.primary.url, replicas=1, local_fsync=True,
                  replica_timeout=5) as both:  # WAITAOF 1 1
        assert all(r.created for r in both.enqueue_many(
            [sd.JobSpec("t", i, id=f"m{i}", delay=60) for i in range(400)]))  # 3 calls
        assert both.cancel("a")

    async def coalesced() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(name, url=aof_pair.primary.url, replicas=1, local_fsync=True,
                                 replica_timeout=5) as aqueue:
            return await asyncio.gather(*(aqueue.enqueue("t", i, id=f"x{i}", delay=60)
                                          for i in range(50)))

    assert all(r.created for r in asyncio.run(coalesced()))
    assert _waitaof_calls(aof_pair.primary) - before >= 4  # the server ran WAITAOF itself
    with aof_pair.replica.client() as replica:  # what they confirmed is on the replica
        assert replica.hexists(f"sd:{{{name}#0}}:jobs", "m399")
        assert replica.hexists(f"sd:{{{name}#0}}:jobs", "x49")
        assert not replica.hexists(f"sd:{{{name}#0}}:jobs", "a")


def test_local_fsync_with_a_stalled_replica_is_not_durable_and_a_retry_is_safe(
    aof_pair: AofPair,
) -> None:
    name = f"q{uuid.uuid4().hex[:8]}"
    first = sd.Queue(name, url=aof_pair.primary.url, replicas=1, local_fsync=True,
                     replica_timeout=AOF_TIMEOUT)
    other = sd.Queue(name, url=aof_pair.primary.url, replicas=1, local_fsync=True,
                     replica_timeout=AOF_TIMEOUT)
    assert wait_until(lambda: _confirmed(other, "warm"), timeout=10)
    aof_pair.stall()
    try:
        with pytest.raises(sd.NotDurable) as missed:
            first.enqueue("t", 1, id="j", delay=60)
        # the retry through another connection writes nothing, and must still not be confirmed
        with pytest.raises(sd.NotDurable):
            other.enqueue("t", 1, id="j", delay=60)
    finally:
        aof_pair.resume()
    error = missed.value
    assert (error.acked, error.replicas) == (0, 1) and error.job_ids == ("j",)
    assert "0 of 1 replicas" in str(error) and "not fsynced" not in str(error)  # local: fsynced
    assert wait_until(lambda: _confirmed(other, "j"), timeout=10)  # confirmed now
    assert other.stats().topics["t"].delayed == 2  # warm and j: the retries doubled nothing
    with aof_pair.replica.client() as replica:
        assert replica.hexists(f"sd:{{{name}#0}}:jobs", "j")
    first.close()
    other.close()


def test_local_fsync_on_a_primary_without_appendonly_is_refused(shared_redis: RedisServer) -> None:
    with sd.Queue(f"q{uuid.uuid4().hex[:8]}", url=shared_redis.url, local_fsync=True) as queue, \
            pytest.raises(sd.ConfigError) as refused:
        queue.enqueue("t", 1, id="a", delay=60)
    assert refused.value.field == "local_fsync" and "appendonly" in str(refused.value)
