"""The worker's probe endpoints (``health_port=``, docs/operations.md#probes): ``GET /livez``
and ``GET /readyz`` served by a small HTTP server in a thread, as the metrics are
(``telemetry/metrics_server.py``), so a stuck event loop cannot hide its own state.

Both ask the event loop (``call_soon_threadsafe``) and wait at most ``LOOP_ANSWER_S``:
``/livez`` is 200 when it answers in time, ``/readyz`` when it answers that the worker is ready
(registered, not stopping, its last call to Redis answered: ``Worker.ready``); else 503.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..base.errors import ConfigError

LOOP_ANSWER_S = 1.0  # /livez: the event loop answers within this long


def _ask(loop: asyncio.AbstractEventLoop, question: Callable[[], bool]) -> bool | None:
    """``question()`` evaluated on ``loop``; None when the loop does not answer in time."""
    answered = threading.Event()
    box: list[bool] = []

    def run() -> None:
        box.append(bool(question()))
        answered.set()

    try:
        loop.call_soon_threadsafe(run)
    except RuntimeError:  # the loop is closed
        return None
    return box[0] if answered.wait(LOOP_ANSWER_S) else None


class HealthServer:
    """``/livez`` and ``/readyz`` of one worker on ``addr:port`` until ``stop()``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, ready: Callable[[], bool], port: int,
                 addr: str = "0.0.0.0") -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/livez":
                    ok = _ask(loop, lambda: True) is not None
                    self._answer(ok, "live" if ok else "event loop does not answer")
                elif path == "/readyz":
                    answer = _ask(loop, ready)
                    self._answer(bool(answer), "ready" if answer else
                                 "event loop does not answer" if answer is None else
                                 "not ready: starting, stopping or no contact with redis")
                else:
                    self.send_error(404, "only /livez and /readyz here")

            def _answer(self, ok: bool, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(200 if ok else 503)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # probes every few seconds: no access log

        try:
            self._server = ThreadingHTTPServer((addr, port), Handler)
        except OSError as exc:
            raise ConfigError(f"health_port: cannot listen on {addr}:{port} ({exc})",
                              field="health_port") from exc
        self._server.daemon_threads = True
        self.port: int = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="sd-health",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)
