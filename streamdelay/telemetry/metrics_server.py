"""Serving a registry at ``/metrics`` on a port, in a thread (prometheus_client's server)."""

from __future__ import annotations

from typing import Any

from ..base.errors import ConfigError
from .prometheus import prometheus


class MetricsServer:
    """``/metrics`` of one registry on ``addr:port`` until ``stop()``."""

    def __init__(self, registry: Any, port: int, addr: str, field: str) -> None:
        client = prometheus(field)
        try:
            self._server, self._thread = client.start_http_server(port, addr, registry)
        except OSError as exc:
            raise ConfigError(f"{field}: cannot listen on {addr}:{port} ({exc})",
                              field=field) from exc
        self.port: int = self._server.server_port

    def stop(self) -> None:
        """Stop listening and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
