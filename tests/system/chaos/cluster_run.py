"""The cluster chaos run: a local 3-primary Redis Cluster, a queue of 4 partitions spread over
the primaries, 3 workers (embedded dispatchers) and 1 standalone dispatcher, jobs flowing (some
with 64 KiB-1 MiB bodies), while the slot of one partition is migrated to another primary and,
later, back. The migration is done by hand the way ``redis-cli --cluster reshard`` does it
(``CLUSTER SETSLOT IMPORTING`` / ``MIGRATING``, ``MIGRATE`` key by key, ``SETSLOT NODE``), with a
pause after each key so jobs flow while the slot is half moved, and the stream keys the scripts
write without declaring them (``t:<topic>``, ``dead:<topic>``) moved first: the order that leaves
them apart from the declared keys longest. After the run every key of that partition's hash tag
must live on one node. With ``--keep-done`` the workers keep tombstones, so the partition's
``done`` key exists and a script can find every declared key on the source mid-migration.

``python -m tests.system.chaos.cluster_run --jobs 10000 --spread 30 --out chaos-results/cluster``
(``make chaos-cluster``). Exit status 1 when the verdict fails (see ``Verdict.ok``).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from pathlib import Path

import redis
from redis.cluster import key_slot

from streamdelay.protocol.keys import PartitionKeys
from tests.support.cluster import LocalCluster, spread_queue_name
from tests.support.redis_server import RedisServer
from tests.system.chaos.run import (
    Processes,
    Production,
    Settings,
    fresh_history,
    locate_lost,
    print_summary,
    produce,
    read_history,
    wait_for_drain,
    write_record,
)
from tests.system.chaos.verdict import Verdict, judge

PARTITIONS = 4
MOVED_PARTITION = 0
KEY_PAUSE = 0.3  # seconds between two MIGRATEs: the slot stays half moved for a while


def node_id(node: RedisServer) -> str:
    """The cluster node id of ``node``."""
    with node.client() as client:
        return str(client.execute_command("CLUSTER", "MYID"), "utf-8")


def undeclared_first(key: bytes) -> tuple[int, bytes]:
    """Sort key: the stream keys no script declares (``t:``, ``dead:``) before the others."""
    tail = key.split(b"}:", 1)[-1]
    return (0 if tail.startswith((b"t:", b"dead:")) else 1, key)


def migrate_slot(cluster: LocalCluster, slot: int, source: RedisServer,
                 target: RedisServer) -> str:
    """Move ``slot`` from ``source`` to ``target`` key by key; a description of what happened.

    A ``MIGRATE`` that fails (``BUSYKEY``: the key exists on both nodes) stops the migration
    there, the slot left half moved, as ``redis-cli --cluster reshard`` leaves it."""
    source_id, target_id = node_id(source), node_id(target)
    started = time.monotonic()
    moved: list[str] = []
    with source.client() as src, target.client() as dst:
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while time.monotonic() - started < 30:
            keys = sorted(src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100),
                          key=undeclared_first)
            if not keys:
                break
            try:
                src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 10000,
                                    "KEYS", keys[0])
            except redis.ResponseError as exc:
                return (f"slot {slot} port {source.port} -> {target.port}: MIGRATE of "
                        f"{keys[0].decode()} failed after {len(moved)} keys: {exc}; left half "
                        f"moved")
            moved.append(keys[0].decode().split("}:", 1)[-1])
            time.sleep(KEY_PAUSE)
        else:
            return f"slot {slot}: keys kept coming back on port {source.port} for 30 s"
        for node in [target, source, *(n for n in cluster.primaries()
                                       if n not in (source, target))]:
            with node.client() as client:
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    return (f"slot {slot} port {source.port} -> {target.port}: {len(moved)} keys "
            f"({', '.join(moved)}) in {time.monotonic() - started:.1f} s")


class Migrator(threading.Thread):
    """Migrates the moved partition's slot away at 30 % of the spread and back at 65 %."""

    def __init__(self, cluster: LocalCluster, queue: str, spread: float) -> None:
        super().__init__(daemon=True)
        self.cluster, self.spread = cluster, spread
        self.jobs_key = PartitionKeys(queue, MOVED_PARTITION).jobs
        self.events: list[dict[str, object]] = []

    def run(self) -> None:
        started = time.monotonic()
        home = self.cluster.owner_of(self.jobs_key)
        away = next(n for n in self.cluster.primaries() if n is not home)
        for share, source, target in ((0.30, home, away), (0.65, away, home)):
            time.sleep(max(0.0, started + share * self.spread - time.monotonic()))
            at = time.time() * 1000
            try:
                detail = migrate_slot(self.cluster, key_slot(self.jobs_key.encode()),
                                      source, target)
            except (redis.RedisError, OSError) as exc:
                detail = f"not injected: {exc}"
            self.events.append({"at": at, "kind": "migrate_slot", "detail": detail,
                                "end": time.time() * 1000})


def split_keys(cluster: LocalCluster, queue: str, partition: int) -> list[str]:
    """``port: key`` for every key of the partition's hash tag when they are on several
    nodes (empty when all are on one)."""
    pattern = PartitionKeys(queue, partition).prefix + "*"
    where: dict[int, list[str]] = {}
    for node in cluster.primaries():
        with node.client() as client:
            found = [k.decode() for k in client.scan_iter(match=pattern, count=1000)]
        if found:
            where[node.port] = sorted(found)
    if len(where) <= 1:
        return []
    return [f"{port}: {key}" for port, keys in sorted(where.items()) for key in keys]


def run_cluster_chaos(settings: Settings, keep_done: float = 0.0) -> Verdict:
    """Run the cluster scenario and return the checked verdict (also written to
    ``settings.out``). Sets ``STREAMDELAY_PARTITIONS`` (and ``CHAOS_KEEP_DONE``) in this
    process for itself and its worker processes."""
    os.environ["STREAMDELAY_PARTITIONS"] = str(PARTITIONS)
    os.environ["CHAOS_KEEP_DONE"] = str(keep_done)
    rng = random.Random(settings.seed)
    history = fresh_history(settings.out)
    production = Production()
    began, began_wall = time.monotonic(), time.time()
    with LocalCluster(primaries=3) as cluster:
        queue = spread_queue_name(cluster, PARTITIONS)
        processes = Processes(cluster.url, queue, history, settings.workers)
        migrator = Migrator(cluster, queue, settings.spread)
        time.sleep(1.0)
        migrator.start()
        started = time.monotonic()
        produce(cluster.url, queue, settings, rng, production)
        time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        migrator.join()
        wait_for_drain(production.acknowledged, history, settings.drain_timeout)
        processes.stop()
        verdict = judge(production.acknowledged, read_history(history), migrator.events,
                        production.refused, refused_oom=production.refused_oom,
                        big=production.big)
        verdict.split_keys = [f"partition {p} {where}" for p in range(PARTITIONS)
                              for where in split_keys(cluster, queue, p)]
        locate_lost(verdict, cluster.url, queue, production.acknowledged, history)
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1),
        "jobs": settings.jobs, "spread_s": settings.spread, "seed": settings.seed,
        "cluster_primaries": 3, "partitions": PARTITIONS, "moved_partition": MOVED_PARTITION,
        "worker_processes": settings.workers, "standalone_dispatchers": 1,
        "big_bodies_planned": settings.big_bodies, "keep_done_s": keep_done,
        "processes_started": processes.started,
    }
    write_record(settings.out, verdict, production)
    return verdict


def main() -> int:
    """Command line entry for ``make chaos-cluster``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--spread", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--big-bodies", type=int, default=50)
    parser.add_argument("--keep-done", type=float, default=0.0,
                        help="the workers' keep_done in seconds (default 0: no tombstones)")
    parser.add_argument("--out", type=Path, default=Path("chaos-results/cluster"))
    args = parser.parse_args()
    settings = Settings(jobs=args.jobs, spread=args.spread, seed=args.seed, out=args.out,
                        drain_timeout=60.0, big_bodies=args.big_bodies)
    verdict = run_cluster_chaos(settings, args.keep_done)
    print_summary(verdict, args.out)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
