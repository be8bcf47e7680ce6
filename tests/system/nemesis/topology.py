"""The Redis a nemesis run works against (``--topology``, docs/reliability.md#make-nemesis):

- ``single``: one redis-server, ``appendonly yes`` / ``appendfsync always``, listening on
  loopback and every host-side address of the run's ``Net`` (so processes in namespaces reach
  it); nemesis targets ``redis`` (``redis_restart``, ``stop``, network cuts of everyone);
- ``sentinel``: a primary, one replica and a Sentinel (tests/support/cluster.py
  ``LocalSentinel``); the producers use ``replicas=1``, so an acknowledged enqueue, cancel or
  reschedule is on both; target ``sentinel`` (``failover``: the primary killed -9, the replica
  promoted, the old primary back as the new replica);
- ``cluster``: a Redis Cluster of 3 primaries (``LocalCluster``), a queue of 3 partitions, one
  on each primary; target ``cluster`` (``migrate``: partition 0's slot moved to the next
  primary key by key, as ``redis-cli --cluster reshard`` does).

Sentinel and Cluster announce 127.0.0.1, which a namespace cannot reach: their runs have no
network faults (the ``single`` runs cut, silence and degrade links).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from streamdelay.protocol.keys import PartitionKeys
from tests.support.cluster import LocalCluster, LocalSentinel, spread_queue_name
from tests.support.redis_server import RedisServer
from tests.system.nemesis.faults import Target
from tests.system.nemesis.net import Net, NetHost
from tests.system.nemesis.targets import cluster_target, redis_target, sentinel_target

TOPOLOGIES = ("single", "sentinel", "cluster")
CLUSTER_PARTITIONS = 3  # one partition per primary


@dataclass
class Servers:
    """A started topology: the URL a process in ``host`` (None: this namespace) uses, the
    queue name and partitions it needs, its nemesis targets, and how to stop it."""

    kind: str
    queue: str
    partitions: int
    url_of: Callable[[NetHost | None], str]
    targets: list[Target]
    stop: Callable[[], None]
    replicas: int = 0

    @property
    def url(self) -> str:
        """The URL of this namespace (the runner's own queue)."""
        return self.url_of(None)


def start(kind: str, queue: str, partitions: int, net: Net | None) -> Servers:
    """Start ``kind`` (create the ``Net``'s hosts first: a single server listens on their
    addresses); the caller stops it with ``Servers.stop`` (also on failure)."""
    if kind == "single":
        server = RedisServer(*(net.redis_bind_args() if net else []), persistent=True).start()

        def url_of(host: NetHost | None) -> str:
            return f"redis://{host.host_ip if host else '127.0.0.1'}:{server.port}/0"

        return Servers(kind, queue, partitions, url_of, [redis_target("redis", server)],
                       server.stop)
    if net is not None:
        raise ValueError(f"the {kind} topology has no network faults (it announces 127.0.0.1)")
    if kind == "sentinel":
        local = LocalSentinel().start()
        try:
            target = sentinel_target("sentinel", local)
        except BaseException:
            local.stop()
            raise
        return Servers(kind, queue, partitions, lambda _host: local.url, [target], local.stop,
                       replicas=1)
    if kind == "cluster":
        cluster = LocalCluster(3).start()
        try:
            name = spread_queue_name(cluster, CLUSTER_PARTITIONS)
            target = cluster_target("cluster", cluster, PartitionKeys(name, 0).jobs)
        except BaseException:
            cluster.stop()
            raise
        return Servers(kind, name, CLUSTER_PARTITIONS, lambda _host: cluster.url, [target],
                       cluster.stop)
    raise ValueError(f"unknown topology {kind!r} (one of {', '.join(TOPOLOGIES)})")
