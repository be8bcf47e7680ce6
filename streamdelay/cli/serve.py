"""The ``streamdelay serve`` command: the HTTP service of docs/http.md, on uvicorn.

Needs the extra ``streamdelay[web]``. One process serves the queues named with ``--queue``,
runs their dispatcher and reclaim upkeep unless ``--no-dispatch``, and stops gracefully on
SIGINT/SIGTERM: it stops accepting connections, answers waiting long polls at once (204),
lets requests in flight finish (``--graceful-timeout``), then stops its dispatchers.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import click

from ..base.errors import ConfigError
from ..web.serve_settings import (  # plain Python: the web stack is not loaded by this import
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_POLLS,
    DEFAULT_REDIS_CONNECTIONS,
    DEFAULT_SSE_KEEPALIVE,
)
from .exit_codes import service_logging
from .shared_options import (
    log_format_option,
    log_level_option,
    partitions_option,
    url_option,
    with_durability_options,
)
from .support import (
    DURABILITY_META,
    OperationFailed,
    UsageProblem,
    library_call,
)

log = logging.getLogger("streamdelay.web")
SERVE_GRACE = 10.0
SOCKET_TIMEOUT = 10.0  # QueueConfig's default; raised above a longer --replica-timeout


def _queue_options(partitions: int | None) -> dict[str, Any]:
    """The options of every served ``AsyncQueue``: ``--partitions`` and the durability options
    ``--replicas`` / ``--replica-timeout`` (docs/guarantees.md#durability-across-failover; a
    call that changes jobs answers 503 ``not_durable`` when the replicas miss). The socket
    timeout is raised above the replica timeout, so the socket outlives the WAIT."""
    options: dict[str, Any] = {}
    if partitions is not None:
        options["partitions"] = partitions
    context = click.get_current_context(silent=True)
    durability = dict(context.meta.get(DURABILITY_META, {})) if context is not None else {}
    options.update(durability)
    wait = durability.get("replica_timeout")
    if isinstance(wait, int | float) and wait + 1.0 > SOCKET_TIMEOUT:
        options["socket_timeout"] = wait + 1.0
    return options


def _web() -> Any:
    try:
        import litestar  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise UsageProblem(f"serve needs the web extra: pip install 'streamdelay[web]' "
                           f"({exc.name} is missing)") from None
    return uvicorn


@click.command()
@url_option
@click.option("--queue", "queues", multiple=True, required=True, metavar="QUEUE",
              help="A queue to serve (repeat for more); any other answers 404.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; beyond loopback only with tokens configured.")
@click.option("--port", "listen_port", type=click.IntRange(0, 65535), default=8080,
              show_default=True, help="TCP port to listen on.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Tokens, name:token:scope,scope per line (also STREAMDELAY_TOKENS).")
@click.option("--dispatch/--no-dispatch", default=True, show_default=True,
              help="Run the dispatcher and reclaim upkeep of the served queues here.")
@click.option("--max-body-bytes", type=click.IntRange(1024, 1 << 30), default=None,
              help="Largest request body accepted (413 above) [default: 8 MiB].")
@click.option("--secure-cookies", is_flag=True,
              help="Mark the dashboard's cookies Secure, with __Host- names (behind an "
                   "HTTPS proxy).")
@click.option("--graceful-timeout", type=click.FloatRange(0, 600), default=SERVE_GRACE,
              show_default=True, help="Seconds requests in flight get to finish at shutdown.")
@click.option("--max-polls", type=click.IntRange(1, 100_000), default=DEFAULT_MAX_POLLS,
              show_default=True, help="Long polls (:reserve) waiting at once per queue, each "
              "on its own Redis connection; 429 busy beyond.")
@click.option("--redis-connections", type=click.IntRange(1, 100_000),
              default=DEFAULT_REDIS_CONNECTIONS, show_default=True,
              help="Redis connections per queue for every other call (a call waits for one).")
@click.option("--max-connections", type=click.IntRange(1, 1_000_000),
              default=DEFAULT_MAX_CONNECTIONS, show_default=True,
              help="Open client connections at most; 503 beyond.")
@click.option("--header-timeout", type=click.FloatRange(0.01, 3600),
              default=DEFAULT_HEADER_TIMEOUT, show_default=True,
              help="Seconds a client has to send a request's headers (408 after).")
@click.option("--body-timeout", type=click.FloatRange(0.01, 3600),
              default=DEFAULT_BODY_TIMEOUT, show_default=True,
              help="Seconds a client has to send a request's body after its headers.")
@click.option("--keep-alive-timeout", type=click.FloatRange(0.01, 3600),
              default=DEFAULT_KEEP_ALIVE, show_default=True,
              help="Seconds an idle keep-alive connection stays open.")
@click.option("--sse-keepalive", type=click.FloatRange(0.05, 3600),
              default=DEFAULT_SSE_KEEPALIVE, show_default=True,
              help="Seconds an event follow may stay silent: then it sends a comment line.")
@partitions_option
@with_durability_options
@log_level_option
@log_format_option
def serve(url: str | None, queues: tuple[str, ...], host: str, listen_port: int,
          token_file: str | None, dispatch: bool, max_body_bytes: int | None,
          secure_cookies: bool, graceful_timeout: float, max_polls: int,
          redis_connections: int, max_connections: int, header_timeout: float,
          body_timeout: float, keep_alive_timeout: float, sse_keepalive: float,
          partitions: int | None, log_level: str, log_format: str) -> int:
    """Serve QUEUEs over HTTP: the JSON API at /v1, a dashboard at /, /metrics, /healthz.

    Producers enqueue, operators inspect and steer, and consumers in any language reserve
    jobs and ack / fail / touch them by receipt (docs/http.md). Clients authenticate with
    Authorization: Bearer TOKEN; with no token configured it listens on loopback only.

    \b
    Example:
      STREAMDELAY_TOKENS='app:s3cret-token-123456:write,consume' \\
        streamdelay serve --queue orders --url redis://redis:6379/0 --host 0.0.0.0
    """
    uvicorn = _web()
    from ..io.config import resolve_url
    from ..web.serve_settings import ServeSettings, session_secret
    from ..web.tokens import TOKENS_ENV, load_tokens

    tokens = library_call(lambda: load_tokens(token_file, os.environ.get(TOKENS_ENV)))
    service_logging(log_level, log_format, tokens.secrets)
    options: dict[str, Any] = {"max_body_bytes": max_body_bytes} if max_body_bytes else {}
    settings = library_call(lambda: ServeSettings(
        url=resolve_url(url), queues=queues, host=host, port=listen_port, tokens=tokens,
        dispatch=dispatch, session_secret=session_secret(), secure_cookies=secure_cookies,
        queue_options=_queue_options(partitions), max_polls=max_polls,
        redis_connections=redis_connections, max_connections=max_connections,
        header_timeout=header_timeout, body_timeout=body_timeout,
        keep_alive_timeout=keep_alive_timeout, sse_keepalive=sse_keepalive, **options))
    try:
        settings.check_bind()
    except ConfigError as exc:  # said once, as the command's error line
        raise UsageProblem(str(exc)) from exc
    if not tokens.configured:
        log.warning("NO TOKEN CONFIGURED: every request on %s:%d is allowed every scope; "
                    "listening on loopback only (give tokens with --token-file or %s)",
                    host, listen_port, TOKENS_ENV)
    from ..web.server import run_server

    try:
        run_server(uvicorn, settings, graceful_timeout)
    except OSError as exc:
        raise OperationFailed(f"cannot listen on {host}:{listen_port}: {exc}") from exc
    return 0
