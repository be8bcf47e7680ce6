"""Clients for a streamdelay URL (read by ``topology.py``): the one sync and the one asyncio
factory, and the checks of a client's kind the runner makes.

Every TLS connection states its certificate and host-name checks explicitly (``tls_settings``),
whatever redis-py's defaults. Every client built here speaks RESP2 and returns bytes, like the
single-server one (whose URL may ask for RESP3, ``?protocol=3``: the plans read either through
``protocol/replies.py``'s normalisers, docs/scale-out.md#urls), and has its commands packed by
hiredis when it is installed (``packing.py``).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.cluster import ClusterNode
from redis.exceptions import RedisClusterException
from redis.sentinel import Sentinel

from ..protocol.streams import read_keys
from .packing import packed_in_c
from .topology import Topology, parse_url

SyncClient = redis.Redis | redis.RedisCluster
AsyncClient = aioredis.Redis | aioredis.RedisCluster
SENTINEL_SOCKET_TIMEOUT = 2.0
# connections per pool (per node of a cluster): redis-py's own default, stated here so that
# every client says how many it may open (QueueConfig.max_connections, docs/operations.md)
DEFAULT_MAX_CONNECTIONS = 100


def node_options(topology: Topology, socket_timeout: float) -> dict[str, Any]:
    """Connection settings of every data-node connection (RESP2, bytes, explicit timeouts); a
    one-server URL's own ``?protocol=3`` overrides the protocol (redis-py's ``from_url``)."""
    options: dict[str, Any] = {
        "protocol": 2,
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": min(socket_timeout, 5.0),
        "health_check_interval": 0,
        "decode_responses": False,
    }
    if topology.kind != "single":  # a single server's URL carries these itself
        for name in ("username", "password", "socket_connect_timeout"):
            if topology.option(name) is not None:
                options[name] = topology.option(name)
    return {**options, **tls_settings(topology)}


def tls_settings(topology: Topology) -> dict[str, Any]:
    """The TLS settings of a ``rediss*`` URL's connections, every check stated explicitly.

    ``ssl_check_hostname`` is on whenever the certificate is verified (``ssl_cert_reqs``
    required, the default, or optional) unless the URL turns it off, so a certificate for
    another host is refused whatever redis-py's own default is (False before redis-py 6).
    """
    if not topology.tls:
        return {}
    reqs = str(topology.option("ssl_cert_reqs") or "required").lower()
    check = topology.option("ssl_check_hostname")
    settings: dict[str, Any] = {
        "ssl_cert_reqs": reqs, "ssl_check_hostname": reqs != "none" if check is None else check}
    if topology.kind != "single":  # a single server's URL names its own connection class
        settings["ssl"] = True
        if topology.option("ssl_ca_certs") is not None:
            settings["ssl_ca_certs"] = topology.option("ssl_ca_certs")
    return settings


def _sentinel_options(topology: Topology) -> dict[str, Any]:
    """Settings of the Sentinel connections: TLS like the data nodes for ``rediss+sentinel``
    (the sentinel password must not cross the network in clear)."""
    options: dict[str, Any] = {"protocol": 2, "socket_timeout": SENTINEL_SOCKET_TIMEOUT,
                               "socket_connect_timeout": SENTINEL_SOCKET_TIMEOUT}
    for name in ("username", "password"):
        if topology.option("sentinel_" + name) is not None:
            options[name] = topology.option("sentinel_" + name)
    return {**options, **tls_settings(topology)}


class _AsyncCluster(aioredis.RedisCluster):
    """redis-py's asyncio cluster client, finding the stream keys of XREADGROUP/XREAD itself.

    redis-py 8.1 asks one fixed node (``COMMAND GETKEYS``) for the keys of commands with movable
    keys, outside its retry loop, and never picks another node when that one dies: after a
    failover every XREADGROUP of the client failed with a connection error forever.

    It also picks the command's routing before it has learnt the slot map: the first command of
    a new client (an EVALSHA, a BZPOPMIN) went to an arbitrary node and came back MOVED. A few
    such at once made it re-initialise and drop the connections in use, so a script that had
    run lost its reply and was sent again (harmless, as every script is idempotent, but the
    dispatcher's promoted count fell short and a start-up stormed). The map is now learnt first.
    """

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        """Learn the slot map before the first command (see the class docstring)."""
        if self._initialize:
            await self.initialize()
        return await super().execute_command(*args, **kwargs)

    async def _determine_slot(self, command: str, *args: Any) -> int:
        try:
            keys = read_keys((command, *args))
        except ValueError as exc:
            raise RedisClusterException(str(exc)) from exc
        if keys is None:
            return await super()._determine_slot(command, *args)
        slots = {self.keyslot(key) for key in keys}
        if len(slots) != 1:
            raise RedisClusterException(f"{command} - all keys must map to the same key slot")
        return slots.pop()


def sync_client(url: str, socket_timeout: float,
                max_connections: int = DEFAULT_MAX_CONNECTIONS) -> SyncClient:
    """A synchronous client (its own pools) for any supported URL: the one sync factory.

    Each pool holds at most ``max_connections``; on one server a caller beyond them waits
    for a free connection (up to ``socket_timeout``) instead of failing at once.
    """
    topology = parse_url(url)
    options = node_options(topology, socket_timeout)
    if topology.kind == "single":
        pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=socket_timeout, **options)
        packed_in_c(pool)
        return redis.Redis.from_pool(pool)
    if topology.kind == "cluster":
        seeds = [ClusterNode(host, port) for host, port in topology.nodes]  # type: ignore[no-untyped-call]
        return redis.RedisCluster(startup_nodes=seeds, max_connections=max_connections,
                                  **options)
    sentinel = Sentinel(  # type: ignore[no-untyped-call]
        list(topology.nodes), sentinel_kwargs=_sentinel_options(topology))
    client: redis.Redis = sentinel.master_for(  # type: ignore[no-untyped-call]
        topology.master, redis_class=redis.Redis, db=topology.db,
        max_connections=max_connections, **options)
    packed_in_c(client.connection_pool)
    return client


def async_client(url: str, socket_timeout: float,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS) -> AsyncClient:
    """An asyncio client (its own pools) for any supported URL: the one asyncio factory.

    Blocking loops pass a ``socket_timeout`` above their block time; it applies to every data
    node of the topology (Sentinel connections keep their own short timeout). Each pool holds
    at most ``max_connections``; on one server a caller beyond them waits for a free
    connection (up to ``socket_timeout``) instead of failing at once with "Too many
    connections" (a cluster's or a Sentinel master's pool still refuses, and the retry
    policy of ``runner.py`` waits that out).
    """
    topology = parse_url(url)
    options = node_options(topology, socket_timeout)
    if topology.kind == "single":
        pool = aioredis.BlockingConnectionPool.from_url(
            url, max_connections=max_connections, timeout=socket_timeout, **options)
        packed_in_c(pool)
        return aioredis.Redis.from_pool(pool)
    if topology.kind == "cluster":
        return _AsyncCluster(
            startup_nodes=[AsyncClusterNode(host, port) for host, port in topology.nodes],
            max_connections=max_connections, **options)
    sentinel = AsyncSentinel(  # type: ignore[no-untyped-call]
        list(topology.nodes), sentinel_kwargs=_sentinel_options(topology))
    client: aioredis.Redis = sentinel.master_for(
        topology.master, redis_class=aioredis.Redis, db=topology.db,
        max_connections=max_connections, **options)
    packed_in_c(client.connection_pool)
    return client


# the pools of a one-server client: the lane and the pipelined sends use their connections
# directly (a Sentinel master's pool finds its master itself and is left to redis-py)
_PLAIN_POOLS = (redis.ConnectionPool, redis.BlockingConnectionPool, aioredis.ConnectionPool,
                aioredis.BlockingConnectionPool)


def plain_pool(pool: object) -> TypeGuard[Any]:
    """True for the pool of a one-server client (not a Sentinel's, not a subclass)."""
    return type(pool) in _PLAIN_POOLS


def is_cluster(client: object) -> bool:
    """True for a redis-py cluster client (sync or asyncio)."""
    return isinstance(client, redis.RedisCluster | aioredis.RedisCluster)
