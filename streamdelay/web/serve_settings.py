"""The settings of ``streamdelay serve``: one frozen ``ServeSettings`` handed to ``create_app``.

Plain Python (no Litestar import), so the CLI builds and checks it before the web stack loads.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from dataclasses import dataclass, field
from typing import Any

from ..base import validation
from ..base.errors import ConfigError, ValidationError
from .tokens import TokenTable

SESSION_SECRET_ENV = "STREAMDELAY_SESSION_SECRET"
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # a batch of ~1000 jobs of a few KiB; 413 above
SESSION_MAX_AGE = 12 * 3600
# what one serve process holds at most, and for how long (docs/security.md#limits-of-serve)
DEFAULT_MAX_POLLS = 1000  # waiting :reserve calls per served queue; 429 busy beyond
DEFAULT_REDIS_CONNECTIONS = 100  # command connections per served queue
DEFAULT_MAX_CONNECTIONS = 4096  # open client connections; 503 beyond
DEFAULT_HEADER_TIMEOUT = 10.0  # from connect (or the previous answer) to the end of the headers
DEFAULT_BODY_TIMEOUT = 30.0  # from the end of the headers to the end of the body
DEFAULT_KEEP_ALIVE = 5.0  # an idle keep-alive connection is closed after this
# an idle event follow sends a comment this often: proxies close a connection silent for 30 s
# or 60 s (docs/http.md#events)
DEFAULT_SSE_KEEPALIVE = 15.0
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def is_loopback(host: str) -> bool:
    """True when ``host`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def session_secret(value: str | None = None) -> bytes:
    """The key that signs dashboard session cookies and CSRF tokens: ``value``, else
    ``STREAMDELAY_SESSION_SECRET``, else random for this process (sessions then end with it)."""
    text = value if value is not None else os.environ.get(SESSION_SECRET_ENV)
    if text is None or text == "":
        return secrets.token_bytes(32)
    if len(text) < 16:
        raise ConfigError("session_secret: use at least 16 characters", field="session_secret")
    return text.encode()


@dataclass(frozen=True)
class ServeSettings:
    """What ``streamdelay serve`` serves and how (docs/http.md#serve).

    ``queue_options`` are passed to every served ``AsyncQueue`` (``partitions``, and later
    durability options such as ``replicas``); ``dispatch=False`` (``--no-dispatch``) leaves
    promoting and reclaiming to workers.
    """

    url: str
    queues: tuple[str, ...]
    host: str = "127.0.0.1"
    port: int = 8080
    tokens: TokenTable = field(default_factory=TokenTable)
    dispatch: bool = True
    session_secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)
    secure_cookies: bool = False  # Secure flag on the session cookie (set it behind HTTPS)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    reclaim_interval: float = 1.0
    queue_options: dict[str, Any] = field(default_factory=dict)
    max_polls: int = DEFAULT_MAX_POLLS
    redis_connections: int = DEFAULT_REDIS_CONNECTIONS
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE
    sse_keepalive: float = DEFAULT_SSE_KEEPALIVE

    def __post_init__(self) -> None:
        if not self.queues:
            raise ConfigError("queue: name at least one queue to serve (--queue Q)",
                              field="queue")
        for name in self.queues:
            try:
                validation.queue_name(name)
            except ValidationError:
                raise ConfigError(f"queue: {str(name)[:80]!r} is not a valid queue name (1-64 "
                                  f"letters, digits, _ . -)", field="queue") from None
        if len(set(self.queues)) != len(self.queues):
            raise ConfigError("queue: a queue is named twice", field="queue")
        validation.positive_int(self.max_body_bytes, "max_body_bytes", 1 << 30)
        validation.seconds(self.reclaim_interval, "reclaim_interval", minimum=0.05,
                           maximum=3600.0)
        validation.positive_int(self.max_polls, "max_polls", 100_000)
        validation.positive_int(self.redis_connections, "redis_connections", 100_000)
        validation.positive_int(self.max_connections, "max_connections", 1_000_000)
        for name in ("header_timeout", "body_timeout", "keep_alive_timeout"):
            validation.seconds(getattr(self, name), name, minimum=0.01, maximum=3600.0)
        validation.seconds(self.sse_keepalive, "sse_keepalive", minimum=0.05, maximum=3600.0)

    def queue_settings(self) -> dict[str, Any]:
        """The options of every served ``AsyncQueue``: the pool sizes of these settings (a
        waiting poll holds a connection of the reserve pool), then ``queue_options``."""
        return {"max_connections": self.redis_connections,
                "reserve_connections": self.max_polls, **self.queue_options}

    def check_bind(self) -> None:
        """Refuse to listen beyond loopback when no token is configured."""
        if not self.tokens.configured and not is_loopback(self.host):
            raise ConfigError(
                f"host: refusing to listen on {self.host} with no token configured: anyone "
                f"who reaches it could enqueue, cancel and purge. Give tokens with "
                f"--token-file or STREAMDELAY_TOKENS, or listen on 127.0.0.1", field="host")
