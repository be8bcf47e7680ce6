"""Queue configuration: pure settings, checked once; clients are built by ``clients.py``.

The URL chooses the topology (``topology.py``): one server, a Redis Cluster or Sentinel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

from ..base import validation
from ..base.errors import ConfigError, ValidationError
from ..base.masking import mask_url as mask_url  # the one masking function, importable here too
from ..base.models import Backoff, BackoffPolicy
from ..protocol.codec import Serializer
from ..protocol.durability import Durability
from ..protocol.event_entries import DEFAULT_EVENTS_MAXLEN, MAX_EVENTS_MAXLEN, events_bound
from ..protocol.queue_spec import check_spec
from . import clients, topology

DEFAULT_URL = "redis://localhost:6379/0"
MAX_REPLICAS = 100
MAX_POOL = 100_000
MAX_DEAD_MAX = 1_000_000_000


@dataclass(frozen=True)
class QueueConfig:
    """Everything that defines a queue and its defaults; shared by producers and workers: a
    ``protocol.spec.QueueSpec`` (name, partitions, codec, job defaults, what the plans read)
    and the connection settings (URL, timeouts, retries, durability waits, pool sizes)."""

    name: str
    url: str
    partitions: int = 1
    serializer: Serializer = "json"
    ttr: float = 60.0
    max_attempts: int = 10
    backoff: BackoffPolicy = field(default_factory=Backoff)
    handler_timeout: float | None = 300.0
    keep_done: float = 0.0
    keep_result: float = 0.0  # default seconds a job's result is kept (docs/results.md)
    max_result_bytes: int = 64 << 10
    max_body_bytes: int = 1 << 20
    past_tolerance: float = 3600.0
    socket_timeout: float = 10.0
    retry_for: float | None = 5.0
    replicas: int = 0
    replica_timeout: float = 1.0
    local_fsync: bool = False
    # the size of each connection pool (per node of a cluster): the command client's, and the
    # one ``reserve`` waits on (every waiting reserve holds a connection); docs/operations.md
    max_connections: int = clients.DEFAULT_MAX_CONNECTIONS
    reserve_connections: int = clients.DEFAULT_MAX_CONNECTIONS
    # lifecycle events (docs/events.md#the-switch): True turns the queue's events stream on
    # (kept to about events_maxlen entries per partition), False off, None leaves it as it is
    events: bool | None = None
    events_maxlen: int = DEFAULT_EVENTS_MAXLEN
    # staged topics (docs/priorities.md): a ready job gains a priority level per this many
    # seconds it waits; written to Redis by the workers and dispatchers of this config (None:
    # leave it as it is; absent there: 10 s)
    priority_aging: float | None = None
    # dead-letter retention (docs/reliability.md#dead-letter-retention): dead jobs older than
    # dead_ttl seconds, or beyond the newest dead_max of their topic, are purged by the
    # dispatchers; written to Redis like the events switch (None: leave it as it is)
    dead_ttl: float | None = None
    dead_max: int | None = None

    def __repr__(self) -> str:
        """The settings with the URL's password masked (configs end up in logs)."""
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__dataclass_fields__
                          if f != "url")
        return f"QueueConfig(url={mask_url(self.url)!r}, {shown})"

    def __post_init__(self) -> None:
        validation.queue_name(self.name)
        check_url(self.url)
        check_spec(self)  # the protocol spec and job defaults (protocol/queue_spec.py)
        validation.seconds(self.socket_timeout, "socket_timeout", minimum=0.1, maximum=3600)
        if self.retry_for is not None:
            validation.seconds(self.retry_for, "retry_for")
        validation.count(self.replicas, "replicas", MAX_REPLICAS)
        validation.seconds(self.replica_timeout, "replica_timeout", minimum=0.001,
                           maximum=3600)
        waits = self.replicas > 0 or self.local_fsync is True
        if waits and self.replica_timeout >= self.socket_timeout:  # the socket outlives WAIT
            raise ValidationError(
                f"replica_timeout: must be shorter than socket_timeout "
                f"({self.replica_timeout:g} s >= {self.socket_timeout:g} s)",
                field="replica_timeout")
        validation.positive_int(self.max_connections, "max_connections", MAX_POOL)
        validation.positive_int(self.reserve_connections, "reserve_connections", MAX_POOL)
        if self.events is not None and not isinstance(self.events, bool):
            raise ValidationError("events: must be True, False or None", field="events")
        validation.positive_int(self.events_maxlen, "events_maxlen", MAX_EVENTS_MAXLEN)
        if self.priority_aging is not None:
            validation.seconds(self.priority_aging, "priority_aging", minimum=0.001,
                               maximum=86400)
        if self.dead_ttl is not None:
            validation.seconds(self.dead_ttl, "dead_ttl", minimum=0.001)
        if self.dead_max is not None:
            validation.positive_int(self.dead_max, "dead_max", MAX_DEAD_MAX)
        if not isinstance(self.local_fsync, bool):
            raise ValidationError("local_fsync: must be a bool", field="local_fsync")

    @property
    def events_bound(self) -> int | None:
        """The events switch the partition check writes (docs/events.md#the-switch)."""
        return events_bound(self.events, self.events_maxlen)

    @property
    def retention(self) -> tuple[int | None, int | None]:
        """What the partition check writes to ``meta``'s ``dead_ttl`` (ms) and ``dead_max``
        fields (None: leave it as it is; docs/reliability.md#dead-letter-retention)."""
        ttl = None if self.dead_ttl is None else validation.delay_ms(self.dead_ttl, "dead_ttl")
        return ttl, self.dead_max

    @cached_property
    def durability(self) -> Durability | None:
        """What fate-changing calls wait for (``WAIT``/``WAITAOF``), None when nothing
        (docs/guarantees.md#durability)."""
        wanted = Durability(self.replicas, validation.delay_ms(self.replica_timeout,
                                                               "replica_timeout"),
                            self.local_fsync)
        return wanted if wanted.active else None


def resolve_url(url: str | None) -> str:
    """The URL to use: the argument, else ``STREAMDELAY_URL``, else the local default."""
    return url or os.environ.get("STREAMDELAY_URL") or DEFAULT_URL


def resolve_partitions(partitions: int | None) -> int:
    """The partition count: the argument, else ``STREAMDELAY_PARTITIONS``, else 1.

    The environment variable is what CLI commands read when ``--partitions`` is not given, the
    same way ``STREAMDELAY_URL`` gives them the URL.
    """
    if partitions is not None:
        return partitions
    raw = os.environ.get("STREAMDELAY_PARTITIONS", "").strip()
    if not raw:
        return 1
    if not raw.isdigit():
        raise ConfigError(f"partitions: STREAMDELAY_PARTITIONS={raw!r} is not a whole number",
                          field="partitions")
    return int(raw)


def check_url(url: object) -> str:
    """Refuse URLs this version cannot serve (scheme, seed nodes, master name), naming ``url``."""
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError(  # the text is not echoed: it may hold a password
            f"url: not a Redis URL (redis://host:port/db), got a {type(url).__name__} without "
            "'://'", field="url")
    topology.parse_url(url)
    return url

