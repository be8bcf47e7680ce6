"""``streamdelay serve``'s app on uvicorn in a thread of the test's process (a real socket, a
real HTTP transport, no child process): for the tests that drive the HTTP consumer beside the
library's drivers (tests/integration/test_consumer_drivers.py) with settings of their own.
``serving(settings)`` yields the base URL and stops the server (its lifespan: the service's
dispatchers, reclaim loop and lateness flushes) on the way out."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn

from streamdelay.web.app import create_app
from streamdelay.web.serve_settings import ServeSettings

START_TIMEOUT = 30.0


@contextlib.contextmanager
def serving(settings: ServeSettings) -> Iterator[str]:
    """Serve ``settings`` on a free loopback port until the block ends; its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning",
                                           lifespan="on", timeout_graceful_shutdown=5))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="served-app", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the app did not start")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
