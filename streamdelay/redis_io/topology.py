"""Redis topologies: one URL chooses a single server, a Redis Cluster or a Sentinel-managed master.

``redis://`` / ``rediss://`` / ``unix://`` name one server (redis-py's own URL syntax);
``redis+cluster://host:port[,host:port...]`` names any seed nodes of a cluster;
``redis+sentinel://host:port[,host:port...]/master_name[/db]`` names the Sentinels of a master.
``rediss+cluster`` / ``rediss+sentinel`` use TLS to the data nodes, and ``rediss+sentinel`` to the
Sentinels as well. Credentials go in the user-info part (``user:password@``) and apply to the data
nodes; a few ``?name=value`` options are accepted (``OPTIONS``). Every TLS connection states its
certificate and host-name checks explicitly (``tls_settings``), whatever redis-py's defaults.
Every client built here speaks RESP2 and returns bytes, like the single-server one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, TypeGuard
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode as AsyncClusterNode
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.cluster import ClusterNode
from redis.connection import HiredisRespSerializer
from redis.exceptions import RedisClusterException
from redis.sentinel import Sentinel
from redis.utils import HIREDIS_AVAILABLE

from ..base.errors import ConfigError
from ..base.masking import MASK, mask_url
from ..protocol.replies import text

SyncClient = redis.Redis | redis.RedisCluster
AsyncClient = aioredis.Redis | aioredis.RedisCluster
Kind = Literal["single", "cluster", "sentinel"]
SINGLE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
SCHEMES = SINGLE_SCHEMES + CLUSTER_SCHEMES + SENTINEL_SCHEMES
_FLAGS = {"true": True, "yes": True, "on": True, "1": True,
          "false": False, "no": False, "off": False, "0": False}


def _flag(raw: str) -> bool:
    if raw.lower() not in _FLAGS:
        raise ValueError(raw)
    return _FLAGS[raw.lower()]


# ?name=value options of cluster and sentinel URLs, and how to read each value
OPTIONS: dict[str, Callable[[str], Any]] = {
    "username": str,
    "password": str,
    "socket_connect_timeout": float,
    "sentinel_username": str,
    "sentinel_password": str,
    "ssl_cert_reqs": str,
    "ssl_ca_certs": str,
    "ssl_check_hostname": _flag,
}
SENTINEL_ONLY = ("sentinel_username", "sentinel_password")
# what redis-py's parse_url may return for a redis:// / rediss:// / unix:// URL that we pass on
SINGLE_OPTIONS = {
    *redis.connection.URL_QUERY_ARGUMENT_PARSERS, "host", "port", "path", "username", "password",
    "connection_class", "client_name", "ssl_ca_certs", "ssl_ca_path", "ssl_cert_reqs",
    "ssl_certfile", "ssl_keyfile", "ssl_password",
}
SENTINEL_SOCKET_TIMEOUT = 2.0
# connections per pool (per node of a cluster): redis-py's own default, stated here so that
# every client says how many it may open (QueueConfig.max_connections, docs/operations.md)
DEFAULT_MAX_CONNECTIONS = 100
SECRET_OPTIONS = ("password", "sentinel_password")


@dataclass(frozen=True)
class Topology:
    """What a URL names: the kind of deployment, its seed nodes, master name, db and options."""

    kind: Kind
    url: str
    nodes: tuple[tuple[str, int], ...] = ()
    master: str = ""
    db: int = 0
    tls: bool = False
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, name: str) -> Any:
        """The value of a ``?name=`` option (or of the user-info credentials), else None."""
        return dict(self.options).get(name)

    def __repr__(self) -> str:
        """The topology with its URL and password options masked (see ``masking``)."""
        options = tuple((name, MASK if name in SECRET_OPTIONS else value)
                        for name, value in self.options)
        return (f"Topology(kind={self.kind!r}, url={mask_url(self.url)!r}, nodes={self.nodes!r}, "
                f"master={self.master!r}, db={self.db!r}, tls={self.tls!r}, options={options!r})")


def _bad(url: str, why: str) -> ConfigError:
    return ConfigError(f"url: {why} in {mask_url(url)!r}", field="url")



def _nodes(url: str, hostlist: str) -> tuple[tuple[str, int], ...]:
    nodes: list[tuple[str, int]] = []
    for item in hostlist.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise _bad(url, f"{item.strip() or 'an empty entry'!s} is not host:port")
        nodes.append((host.strip("[]"), int(port)))
    return tuple(nodes)


def _options(url: str, query: str, userinfo: str, kind: Kind) -> tuple[tuple[str, Any], ...]:
    found: dict[str, Any] = {}
    if userinfo:
        user, sep, password = userinfo.partition(":")
        if user:
            found["username"] = unquote(user)
        if sep:
            found["password"] = unquote(password)
    for name, raw in parse_qsl(query, keep_blank_values=True):
        reader = OPTIONS.get(name)
        if reader is None or (name in SENTINEL_ONLY and kind != "sentinel"):
            known = ", ".join(n for n in OPTIONS if kind == "sentinel" or n not in SENTINEL_ONLY)
            raise _bad(url, f"unknown option {name!r} (known: {known})")
        try:
            found[name] = reader(raw)
        except ValueError:
            raise _bad(url, f"option {name!r} has a bad value {raw!r}") from None
    return tuple(sorted(found.items()))


def _check_single(url: str) -> tuple[tuple[str, Any], ...]:
    """Refuse what redis-py would only refuse later with a raw error (port, db, options);
    returns the URL's TLS checks (``ssl_cert_reqs``, ``ssl_check_hostname``) when it has any."""
    try:
        found = redis.connection.parse_url(url)  # type: ignore[no-untyped-call]
    except ValueError as exc:
        raise _bad(url, str(exc).rstrip(".")) from None
    unknown = sorted(set(found) - SINGLE_OPTIONS)
    if unknown:
        raise _bad(url, f"unknown option {unknown[0]!r}")
    return tuple(sorted((name, found[name]) for name in ("ssl_cert_reqs", "ssl_check_hostname")
                        if name in found))


def _check_tls(url: str, topology: Topology) -> Topology:
    reqs = str(topology.option("ssl_cert_reqs") or "required").lower()
    if reqs not in ("none", "optional", "required"):
        raise _bad(url, "ssl_cert_reqs must be none, optional or required")
    if reqs == "none" and topology.option("ssl_check_hostname"):
        raise _bad(url, "ssl_check_hostname=true needs ssl_cert_reqs=required or optional "
                        "(a host name is only checked on a verified certificate)")
    return topology


def parse_url(url: str) -> Topology:
    """Read a streamdelay URL; raises ``ConfigError`` naming ``url`` when it is malformed."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise _bad(url, "not a Redis URL (redis://host:port/db)")
    if scheme not in SCHEMES:
        raise ConfigError(
            f"url: scheme {scheme!r} is not supported (use "
            f"{', '.join(s + '://' for s in SCHEMES)})", field="url")
    if scheme in SINGLE_SCHEMES:
        tls = _check_single(url)
        return _check_tls(url, Topology("single", url, tls=scheme == "rediss", options=tls))
    parts = urlsplit("x://" + rest)
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    kind: Kind = "cluster" if scheme in CLUSTER_SCHEMES else "sentinel"
    topology = Topology(kind, url, _nodes(url, hostlist), tls=scheme.startswith("rediss"),
                        options=_options(url, parts.query, userinfo, kind))
    path = [p for p in parts.path.split("/") if p]
    if kind == "cluster":
        if path not in ([], ["0"]):
            raise _bad(url, "a cluster URL takes no database (a cluster has database 0 only)")
        return _check_tls(url, topology)
    if not path or len(path) > 2:
        raise _bad(url, "a sentinel URL needs /master_name or /master_name/db")
    if len(path) == 2 and not path[1].isdigit():
        raise _bad(url, f"database {path[1]!r} is not a number")
    return _check_tls(url, Topology(kind, url, topology.nodes, unquote(path[0]),
                                    int(path[1]) if len(path) == 2 else 0, topology.tls,
                                    topology.options))


def node_options(topology: Topology, socket_timeout: float) -> dict[str, Any]:
    """Connection settings of every data-node connection (RESP2, bytes, explicit timeouts)."""
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
        if str(command).upper() in ("XREADGROUP", "XREAD"):
            return self._stream_slot(command, args)
        return await super()._determine_slot(command, *args)

    def _stream_slot(self, command: str, args: tuple[Any, ...]) -> int:
        words = [text(a) for a in args]
        upper = [w.upper() for w in words]
        if "STREAMS" not in upper:
            raise RedisClusterException(f"{command} without STREAMS: {args!r}")
        rest = args[upper.index("STREAMS") + 1:]
        slots = {self.keyslot(key) for key in rest[:len(rest) // 2]}
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


def packed_in_c(pool: Any) -> None:
    """Let hiredis pack the commands of ``pool``'s connections (sync or asyncio), when it is
    installed.

    redis-py's asyncio connections pack every command in Python, one join per argument: an
    ``ackJobs`` call of 64 deliveries took ~245 µs against ~50 µs with hiredis, a few µs per job
    on the worker's and ``AsyncQueue``'s hot paths; its sync connections use hiredis but look
    at every argument in a Python generator first (docs/benchmarks.md#what-bounds-the-figures).
    """
    if HIREDIS_AVAILABLE:
        pool.connection_class = _packed_class(pool.connection_class)


@cache
def _packed_class(base: type) -> type:
    import hiredis  # present: only called when redis-py found it

    serializer = HiredisRespSerializer()

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        first = args[0]
        if isinstance(first, str) and " " not in first:  # the common case: straight to C
            try:
                return [hiredis.pack_command(args)]
            except TypeError:  # bytearray, memoryview, ...: redis-py's own way below
                pass
        packed: list[bytes] = serializer.pack(*args)
        return packed

    def pack_commands(self: Any, commands: Any) -> list[bytes]:
        # a pipeline's commands, each packed as above (redis-py's own pack_commands goes
        # through its serializer's per-argument generator: ~0.5 µs per job of enqueue_many);
        # small ones joined, a large one (a big body) left as its own piece, uncopied
        output: list[bytes] = []
        pieces: list[bytes] = []
        size = 0
        cutoff = self._buffer_cutoff
        for args in commands:
            for chunk in pack_command(self, *args):
                if len(chunk) > cutoff:
                    if pieces:
                        output.append(b"".join(pieces))
                        pieces, size = [], 0
                    output.append(chunk)
                    continue
                pieces.append(chunk)
                size += len(chunk)
                if size > cutoff:
                    output.append(b"".join(pieces))
                    pieces, size = [], 0
        if pieces:
            output.append(b"".join(pieces))
        return output

    return type(f"Packed{base.__name__}", (base,),
                {"pack_command": pack_command, "pack_commands": pack_commands})


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
