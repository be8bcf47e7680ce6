"""Running the app on uvicorn with a graceful stop (used by ``streamdelay serve``)."""

from __future__ import annotations

import logging
import signal
import socket
from typing import Any

from ..base.masking import mask_url
from .app import create_app
from .protocol import guarded_protocol
from .serve_settings import ServeSettings

log = logging.getLogger("streamdelay.web")
FILE_MARGIN = 256  # files beyond the sockets of the limits: logs, the dispatchers' clients


class _NoColor(logging.Filter):
    """Drops uvicorn's ``color_message`` extra (terminal escapes) from its log records."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record, without the field."""
        record.__dict__.pop("color_message", None)
        return True


def _stopped(signum: int, frame: Any) -> None:
    """The signal that stopped the server, re-raised by uvicorn: already handled."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _open_files(settings: ServeSettings) -> None:
    """Raise the soft limit of open files to what the limits may hold at once (client
    connections, then each queue's reserve and command pools), within the hard limit; warn
    when the hard limit is lower (new connections would fail to be accepted first)."""
    import resource

    needed = (settings.max_connections + FILE_MARGIN + len(settings.queues)
              * (settings.max_polls + settings.redis_connections))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < needed:
        log.warning("open files are limited to %d but the limits may hold %d (lower "
                    "--max-connections or --max-polls, or raise ulimit -n)", target, needed)


def run_server(uvicorn: Any, settings: ServeSettings, graceful_timeout: float) -> None:
    """Serve until SIGINT/SIGTERM. On the signal, long polls answer at once (``draining``),
    requests in flight get ``graceful_timeout`` seconds, then the lifespan stops the
    dispatchers and closes the connections."""
    app = create_app(settings)
    for name in ("uvicorn.error", "uvicorn"):
        logging.getLogger(name).addFilter(_NoColor())
    service = app.state.service

    class Server(uvicorn.Server):  # type: ignore[misc]
        """uvicorn's server, telling the long polls to end when a stop is asked."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            service.draining.set()
            super().handle_exit(sig, frame)

    listening = bind(settings.host, settings.port)  # an OSError here: exit 1, one line
    port = listening.getsockname()[1]
    # uvicorn's own limit_concurrency is left off: the protocol class caps connections and
    # times out slow reads itself, answering in JSON (web/protocol.py)
    config = uvicorn.Config(app, host=settings.host, port=port, log_config=None,
                            access_log=False, lifespan="on", server_header=False,
                            timeout_graceful_shutdown=graceful_timeout, proxy_headers=False,
                            http=guarded_protocol(settings),
                            timeout_keep_alive=settings.keep_alive_timeout)
    _open_files(settings)
    server = Server(config)
    log.info("serving queue(s) %s from %s on http://%s:%d (dispatch %s, tokens: %s)",
             ", ".join(settings.queues), mask_url(settings.url), settings.host, port,
             "on" if settings.dispatch else "off",
             ", ".join(settings.tokens.names) or "none")
    # uvicorn re-raises the stop signal once it has shut down; with these handlers in place
    # that ends the command with exit code 0 instead of death by signal
    previous = {sig: signal.signal(sig, _stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[listening])
    finally:
        listening.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    log.info("stopped")
    if not server.started:
        raise OSError(f"the server did not start on {settings.host}:{settings.port}")
