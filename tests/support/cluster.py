"""Real local Redis Cluster and Sentinel deployments for the scale-out tests and benchmarks.

``LocalCluster`` starts N primaries (and optionally one replica each) as ``redis-server`` processes
with ``cluster-enabled yes`` on free loopback ports, each in its own temp directory, and joins them
with ``redis-cli --cluster create`` (valkey-server and valkey-cli under ``pytest --server
valkey``). ``LocalSentinel`` starts a master, one replica and one Sentinel with a short
``down-after-milliseconds`` so a killed master fails over in ~1-2 s.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.cluster import key_slot

import streamdelay as sd
from streamdelay.io.agreement import agree_partitions_sync
from streamdelay.protocol.keys import PartitionKeys
from tests.support.redis_server import (
    RedisServer,
    answering_pid,
    env_with_pythonpath,
    free_port,
    server_command,
    wait_until,
)

MASTER_NAME = "sdmaster"
# Jobs a failover-under-load run has accepted once the new primary is in charge: a count, not a
# rate (how fast a loaded machine enqueues is not what the code promises; that enqueues go on
# after the failover, within the queue's retry_for, is).
AFTER_FAILOVER = 50


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range of ports for outgoing connections (Linux; a common default else)."""
    with contextlib.suppress(OSError, ValueError):
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    return 32768, 60999


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free as well, both below the
    ephemeral range: a port the kernel hands out to outgoing connections could be taken by
    any client socket between this check and the node binding it."""
    low, high = ephemeral_range()
    top = min(low, 65536) - 10_001
    if top < 10_000:
        raise RuntimeError(f"no room for cluster port pairs below the ephemeral range {low}-{high}")
    for _ in range(200):
        port = random.randint(10_000, top)
        with contextlib.ExitStack() as stack:
            try:
                for candidate in (port, port + 10000):
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port pair for a cluster node")


def _info(client: redis.Redis, section: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in client.info(section).items()}


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    raw = client.execute_command("CLUSTER INFO")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.strip().split(":", 1) for line in text.splitlines() if ":" in line)


class LocalCluster:
    """A Redis Cluster of ``primaries`` nodes (plus ``replicas`` per primary) on 127.0.0.1."""

    def __init__(self, primaries: int = 3, replicas: int = 0, node_timeout_ms: int = 2000) -> None:
        if shutil.which(server_command("cli")) is None:
            raise RuntimeError(f"{server_command('cli')} is not installed (make test installs it)")
        self.replicas = replicas
        self.nodes = []
        for _ in range(primaries * (1 + replicas)):
            node = RedisServer("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                               "--cluster-node-timeout", str(node_timeout_ms),
                               "--cluster-require-full-coverage", "yes",
                               "--repl-diskless-sync-delay", "0", port_picker=cluster_port)
            self.nodes.append(node)

    @property
    def url(self) -> str:
        """``redis+cluster://`` URL listing every node as a seed."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def start(self) -> LocalCluster:
        """Start every node, create the cluster and wait until every live node reports ok."""
        for node in self.nodes:
            node.start()
        subprocess.run(
            [server_command("cli"), "--cluster", "create",
             *(f"127.0.0.1:{n.port}" for n in self.nodes),
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            check=True, capture_output=True, timeout=60)
        if not wait_until(self._formed, timeout=30, interval=0.1):
            raise RuntimeError("the local cluster did not reach cluster_state:ok")
        return self

    def live_nodes(self) -> list[RedisServer]:
        """Nodes whose process is running."""
        return [n for n in self.nodes if n.process is not None]

    def healthy(self) -> bool:
        """Every live node says cluster_state:ok with all 16384 slots served, and every replica
        has finished its sync (a replica that never synced cannot be promoted)."""
        for node in self.live_nodes():
            with node.client() as client:
                info = _cluster_info(client)
                replication = _info(client, "replication")
            if info.get("cluster_state") != "ok" or info.get("cluster_slots_ok") != "16384":
                return False
            if replication.get("role") == "slave" and replication.get("master_link_status") != "up":
                return False
        return True

    def _formed(self) -> bool:
        return self.healthy() and len(self.primaries()) * (1 + self.replicas) == len(self.nodes)

    def primaries(self) -> list[RedisServer]:
        """The live nodes that are primaries right now."""
        found = []
        for node in self.live_nodes():
            with node.client() as client:
                if _info(client, "replication").get("role") == "master":
                    found.append(node)
        return found

    def owner_of(self, key: str) -> RedisServer:
        """The live primary serving the slot of ``key`` (as the cluster itself says)."""
        slot = key_slot(key.encode())
        with self.primaries()[0].client() as client:
            for start, end, primary, *_replicas in client.execute_command("CLUSTER SLOTS"):
                if start <= slot <= end:
                    return next(n for n in self.nodes if n.port == int(primary[1]))
        raise LookupError(f"no primary serves slot {slot}")

    def stop(self) -> None:
        """Kill every node and remove their directories."""
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalSentinel:
    """A master, one replica and one Sentinel watching them (quorum 1) on 127.0.0.1."""

    def __init__(self, down_after_ms: int = 500, failover_timeout_ms: int = 3000) -> None:
        self.master = RedisServer("--repl-diskless-sync-delay", "0")
        self.replica = RedisServer("--repl-diskless-sync-delay", "0")  # a master after failover
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="sd-sentinel-"))
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis+sentinel://`` URL of the watched master, database 0."""
        return f"redis+sentinel://127.0.0.1:{self.port}/{MASTER_NAME}/0"

    def sentinel_client(self) -> redis.Redis:
        """A plain client connected to the Sentinel itself."""
        return redis.Redis(port=self.port, socket_timeout=5, decode_responses=True)

    def start(self) -> LocalSentinel:
        """Start master, replica and Sentinel; wait until the Sentinel knows the synced replica."""
        self.master.start()  # its port is final once it started (see RedisServer.start)
        self.replica.extra += ["--replicaof", "127.0.0.1", str(self.master.port)]
        self.replica.start()
        config = self.dir / "sentinel.conf"
        config.write_text("\n".join([
            f"port {self.port}", "bind 127.0.0.1", f"dir {self.dir}",
            f"logfile {self.dir / 'sentinel.log'}",
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master.port} 1",
            f"sentinel down-after-milliseconds {MASTER_NAME} {self.down_after_ms}",
            f"sentinel failover-timeout {MASTER_NAME} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {MASTER_NAME} 1", ""]))
        self.process = subprocess.Popen([server_command(), str(config), "--sentinel"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(self._ready, timeout=30, interval=0.1):
            raise RuntimeError("sentinel did not discover the replica in time")
        return self

    def _ready(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"the Sentinel process exited (port {self.port} taken?); log in "
                               f"{self.dir / 'sentinel.log'}")
        if answering_pid(self.port) != self.process.pid:
            return False  # not up yet, or another process answers on the port
        with contextlib.suppress(redis.RedisError):
            with self.replica.client() as client:
                if _info(client, "replication").get("master_link_status") != "up":
                    return False
            with self.sentinel_client() as sentinel:
                replicas = sentinel.execute_command("SENTINEL", "REPLICAS", MASTER_NAME)
                return any("s_down" not in str(r) and str(self.replica.port) in str(r)
                           for r in replicas)
        return False

    def master_port(self) -> int | None:
        """The port the Sentinel currently names as master."""
        with contextlib.suppress(redis.RedisError), self.sentinel_client() as sentinel:
            address = sentinel.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
            return int(address[1]) if address else None
        return None

    def failed_over_to(self, server: RedisServer) -> bool:
        """The Sentinel's failover to ``server`` is over: it names ``server`` as master, no
        failover is in progress any more, and ``server`` itself says it is a master. (During a
        failover the Sentinel already names the replica it is promoting; an old master that
        comes back then can make it give up and turn the replica back into its follower.)"""
        if self.master_port() != server.port:
            return False
        with contextlib.suppress(redis.RedisError), self.sentinel_client() as sentinel:
            state = sentinel.execute_command("SENTINEL", "MASTER", MASTER_NAME)
            if not isinstance(state, dict):  # a flat reply, when redis-py does not parse it
                state = dict(zip(state[::2], state[1::2], strict=True))
            if "failover_in_progress" in str(state.get("flags", "")):
                return False
            with server.client() as client:
                return _info(client, "replication").get("role") == "master"
        return False

    def stop(self) -> None:
        """Kill everything and remove the directories."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.master.stop()
        self.replica.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalSentinel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def spread_queue_name(cluster: LocalCluster, partitions: int) -> str:
    """A fresh queue name whose partitions land on every primary (checked against the cluster)."""
    primaries = {node.port for node in cluster.primaries()}
    for _ in range(200):
        name = f"q{uuid.uuid4().hex[:8]}"
        owners = {cluster.owner_of(PartitionKeys(name, p).jobs).port for p in range(partitions)}
        if owners == primaries:
            return name
    raise AssertionError("no queue name spreads over every primary")


def replica_of(cluster: LocalCluster, primary: RedisServer) -> RedisServer:
    """A live replica that follows ``primary``."""
    for node in cluster.live_nodes():
        with node.client() as client:
            info = _info(client, "replication")
        if info.get("role") == "slave" and info.get("master_port") == str(primary.port):
            return node
    raise LookupError(f"no replica follows port {primary.port}")


def is_primary(node: RedisServer) -> bool:
    """The node answers and says it is a primary."""
    with contextlib.suppress(redis.RedisError), node.client() as client:
        return _info(client, "replication").get("role") == "master"
    return False


def keys_per_node(cluster: LocalCluster, pattern: str) -> dict[int, int]:
    """How many keys matching ``pattern`` each live primary holds (SCAN on each node)."""
    counts: dict[int, int] = {}
    for node in cluster.primaries():
        with node.client() as client:
            counts[node.port] = sum(1 for _ in client.scan_iter(match=pattern, count=1000))
    return counts


def error_stats(node: RedisServer) -> dict[str, str]:
    """The node's ``INFO errorstats`` (e.g. ``errorstat_CROSSSLOT``)."""
    with node.client() as client:
        return _info(client, "errorstats")


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``predicate()`` is truthy or fail with ``what``."""
    if not wait_until(predicate, timeout=timeout, interval=0.05):
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def now_ms() -> int:
    """Local wall clock in ms (for reports only, never for due times)."""
    return int(time.time() * 1000)


class Producer(threading.Thread):
    """Enqueues jobs ``<prefix><n>`` of topic ``t`` back to back until ``stop()``.

    ``accepted`` holds (id, monotonic time the enqueue call started) for every call that returned;
    ``errors`` every exception (the queue's retry policy should make that list stay empty).
    """

    def __init__(self, queue: sd.Queue, prefix: str, pause: float = 0.005) -> None:
        super().__init__(daemon=True)
        self.queue, self.prefix, self.pause = queue, prefix, pause
        self.accepted: list[tuple[str, float]] = []
        self.errors: list[BaseException] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        """Produce until stopped."""
        number = 0
        while not self._stop_event.is_set():
            number += 1
            job_id = f"{self.prefix}{number}"
            started = time.monotonic()
            try:
                self.queue.enqueue("t", number, id=job_id, delay=random.uniform(0, 0.2))
                self.accepted.append((job_id, started))
            except Exception as exc:  # recorded for the test to assert on
                self.errors.append(exc)
            time.sleep(self.pause)

    def stop(self) -> None:
        """Stop producing and wait for the thread."""
        self._stop_event.set()
        self.join(30)


def start_cli(args: list[str], url: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """A ``python -m streamdelay ...`` process (worker or dispatcher) logging to ``log``."""
    environment = env_with_pythonpath(str(Path(__file__).resolve().parents[2]))
    environment.update(env)
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "streamdelay", *args, "--url", url],
                                stdout=out, stderr=subprocess.STDOUT, env=environment)


def stop_processes(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process, then SIGKILL what is still alive after a grace period."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def handled_ids(path: Path) -> list[str]:
    """Job ids a ``scale_worker_app`` worker recorded (one line per delivery)."""
    return path.read_text().split() if path.exists() else []


@dataclass
class FailoverReport:
    """What a failover under load did to the jobs."""

    accepted: int  # enqueue calls that returned
    accepted_after: int  # ... of which started after the failover completed
    lost_before: list[str]  # accepted before the failover completed, never handled
    lost_after: list[str]  # accepted after the failover completed, never handled (must be empty)
    duplicates: int  # deliveries beyond the first (at-least-once redeliveries)
    promotion_s: float  # kill -9 to "the new primary is in charge"
    producer_errors: list[BaseException]

    def summary(self) -> str:
        """One line for the test log and the report."""
        return (f"accepted={self.accepted} after_failover={self.accepted_after} "
                f"lost_before={len(self.lost_before)} lost_after={len(self.lost_after)} "
                f"duplicates={self.duplicates} promotion={self.promotion_s:.1f}s "
                f"producer_errors={len(self.producer_errors)}")


def failover_under_load(
    url: str, name: str, partitions: int, workdir: Path, kill: Callable[[], None],
    promoted: Callable[[], bool],
) -> FailoverReport:
    """Run a CLI worker (``--no-dispatch``), a CLI dispatcher and a producer on ``url``; ``kill``
    the primary under load, wait until ``promoted()``, keep producing until ``AFTER_FAILOVER``
    jobs were accepted after it, then wait for every job accepted after the promotion to be
    handled and report what happened to the others."""
    out = workdir / "handled.txt"
    env = {"SCALE_APP_QUEUE": name, "SCALE_APP_PARTITIONS": str(partitions),
           "STREAMDELAY_PARTITIONS": str(partitions), "SCALE_APP_OUT": str(out)}
    queue = sd.Queue(name, url=url, partitions=partitions, retry_for=60, ttr=3)
    # fixes the partition count before the processes start (stats would say "no such queue")
    agree_partitions_sync(queue.client, url, name, partitions, 60)
    processes = [
        start_cli(["worker", "tests.support.apps.scale_worker_app:worker", "--no-dispatch"], url,
                  workdir / "worker.log", **env),
        start_cli(["dispatch", name], url, workdir / "dispatch.log", **env),
    ]
    producer = Producer(queue, "j")
    try:
        producer.start()
        wait_for(lambda: len(handled_ids(out)) >= 100, 60, "jobs flowing before the kill")
        killed = time.monotonic()
        kill()
        wait_for(promoted, 60, "the replica to take over")
        done = time.monotonic()
        wait_for(lambda: sum(started >= done for _, started in list(producer.accepted))
                 >= AFTER_FAILOVER, 60, f"{AFTER_FAILOVER} jobs accepted after the failover")
        producer.stop()
        after = {job_id for job_id, started in producer.accepted if started >= done}
        wait_for(lambda: after <= set(handled_ids(out)), 60, "every job accepted after failover")
        everything = {job_id for job_id, _ in producer.accepted}
        # jobs reserved on the old primary come back after their ttr (3 s); give them that long
        wait_until(lambda: everything <= set(handled_ids(out)), timeout=8, interval=0.2)
        seen = handled_ids(out)
        missing = everything - set(seen)
        return FailoverReport(
            len(everything), len(after), sorted(missing - after), sorted(missing & after),
            len(seen) - len(set(seen)), done - killed, producer.errors)
    finally:
        producer.stop()
        stop_processes(processes)
        queue.close()
