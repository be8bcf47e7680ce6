"""Ready-made nemesis targets (tests/system/nemesis/faults.py, docs/reliability.md#nemesis):
a process the run started, a redis-server restarted from its append-only file, a Sentinel pair
that fails over, a Redis Cluster whose slot migrates."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import redis
from redis.crc import key_slot

from tests.support.cluster import MASTER_NAME, LocalCluster, LocalSentinel
from tests.support.redis_server import RedisServer, wait_until
from tests.system.chaos.cluster_run import migrate_slot
from tests.system.nemesis.faults import Kind, Target

FAILOVER_TIMEOUT_S = 60.0


def process_target(name: str, kind: Kind, process: Callable[[], subprocess.Popen[bytes] | None],
                   restart: Callable[[], None] | None, host: str | None = None) -> Target:
    """A worker, dispatcher, ``serve`` or producer: ``process()`` is its current Popen (the
    one ``restart()`` replaces; restart should reap the killed one with ``wait()``; None: it
    is never killed, a producer)."""

    def pid() -> int | None:
        current = process()
        return current.pid if current is not None and current.poll() is None else None

    return Target(name, kind, pid=pid, restart=restart, host=host)


def redis_target(name: str, server: RedisServer) -> Target:
    """A redis-server: ``redis_restart`` and ``stop``; cuts hit every ``Net`` host. Start it
    with ``persistent=True`` (``appendfsync always``) so a restart finds every acknowledged
    write in its append-only file."""

    def pid() -> int | None:
        return server.process.pid if server.process is not None else None

    def restart() -> None:
        server.kill()  # reaps the process the nemesis killed (or kills a live one)
        server.start()  # same port, same directory: loads the append-only file

    return Target(name, "redis", pid=pid, restart=restart)


def _current(local: LocalSentinel) -> tuple[RedisServer, RedisServer]:
    port = local.master_port()
    primary = next((s for s in (local.master, local.replica) if s.port == port), local.master)
    return primary, local.replica if primary is local.master else local.master


def _sentinel_failover(local: LocalSentinel) -> None:
    """``SENTINEL FAILOVER``, again while Sentinel has no replica it deems good yet
    (``NOGOODSLAVE``: its view of the replica is refreshed every few seconds)."""
    deadline = time.monotonic() + FAILOVER_TIMEOUT_S
    while True:
        try:
            with local.sentinel_client() as sentinel:
                sentinel.execute_command("SENTINEL", "FAILOVER", MASTER_NAME)
            return
        except redis.ResponseError as exc:
            if "NOGOODSLAVE" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def sentinel_target(name: str, local: LocalSentinel, graceful: bool = False) -> Target:
    """A primary with one replica under Sentinel: ``failover`` kills the current primary with
    -9 (graceful: ``SENTINEL FAILOVER`` instead), waits until Sentinel has promoted the replica,
    and after ``duration_s`` brings the old primary back; Sentinel makes it the new replica.
    The producers use ``replicas=1`` so an acknowledged enqueue is on both."""

    def failover(duration_s: float) -> str:
        primary, replica = _current(local)
        began = time.monotonic()
        if graceful:
            _sentinel_failover(local)
        else:
            primary.kill()
        promoted = wait_until(lambda: local.failed_over_to(replica), timeout=FAILOVER_TIMEOUT_S,
                              interval=0.1)
        took = time.monotonic() - began
        if not graceful:
            time.sleep(duration_s)
            primary.start()
        how = "SENTINEL FAILOVER" if graceful else "primary killed -9"
        return (f"{how} (port {primary.port}); {'promoted' if promoted else 'NOT promoted'} "
                f"port {replica.port} after {took:.1f} s")

    def pid() -> int | None:
        return local.process.pid if local.process is not None else None

    return Target(name, "sentinel", pid=pid, action=failover)


def cluster_target(name: str, cluster: LocalCluster, key: str) -> Target:
    """A Redis Cluster: ``migrate`` moves the slot of ``key`` (a partition's jobs key, say)
    from the primary that serves it to the next one, key by key (``migrate_slot`` of
    tests/system/chaos/cluster_run.py); a migration left half moved (``MIGRATE`` refused with
    ``BUSYKEY``: the key exists on both nodes) raises, the slot left so."""

    def migrate(_duration_s: float) -> str:
        owner = cluster.owner_of(key)
        primaries = sorted(cluster.primaries(), key=lambda n: n.port)
        to = primaries[(primaries.index(owner) + 1) % len(primaries)]
        detail = migrate_slot(cluster, key_slot(key.encode()), owner, to)
        if "half moved" in detail or "kept coming back" in detail:
            raise RuntimeError(detail)  # the nemesis lists it among its fault errors
        return detail

    return Target(name, "cluster", action=migrate)
