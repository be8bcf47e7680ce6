"""Real redis-server processes for the tests: free loopback ports, private directories,
killable and restartable (same port, same data directory)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server child process; ``kill()`` (SIGKILL) and ``start()`` again keep its data."""

    def __init__(self, *extra: str, persistent: bool = False) -> None:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not installed (make test installs it)")
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="sd-redis-"))
        self.extra = list(extra)
        if persistent:
            self.extra += ["--appendonly", "yes", "--appendfsync", "always"]
        else:
            self.extra += ["--appendonly", "no"]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """redis:// URL of database 0."""
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        """A plain redis-py client for checks."""
        return redis.Redis(port=self.port, socket_timeout=10)

    def start(self) -> RedisServer:
        """Start (or restart) the server and wait until it answers PING."""
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--dir", str(self.dir), "--daemonize", "no",
                "--logfile", str(self.dir / "redis.log"), *self.extra]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.ConnectionError, redis.BusyLoadingError):
                if self.client().ping():
                    return self
            time.sleep(0.02)
        raise RuntimeError(f"redis-server on port {self.port} did not start")

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


def env_with_pythonpath(*paths: str) -> dict[str, str]:
    """The current environment with ``paths`` prepended to PYTHONPATH (for worker apps)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    return env
