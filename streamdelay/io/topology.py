"""Redis topologies: one URL chooses a single server, a Redis Cluster or a Sentinel-managed master.

``redis://`` / ``rediss://`` / ``unix://`` name one server (redis-py's own URL syntax);
``redis+cluster://host:port[,host:port...]`` names any seed nodes of a cluster;
``redis+sentinel://host:port[,host:port...]/master_name[/db]`` names the Sentinels of a master.
``rediss+cluster`` / ``rediss+sentinel`` use TLS to the data nodes, and ``rediss+sentinel`` to the
Sentinels as well. Credentials go in the user-info part (``user:password@``) and apply to the data
nodes; a few ``?name=value`` options are accepted (``OPTIONS``). ``parse_url`` reads a URL into
a ``Topology``; the clients for it are built by ``clients.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

import redis

from ..base.errors import ConfigError
from ..base.masking import MASK, mask_url

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


