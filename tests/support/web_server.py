"""A real ``streamdelay serve`` subprocess for the HTTP tests (docs/http.md).

``WebServer(redis_url, queues)`` starts ``python -m streamdelay serve`` on a free loopback port
against a test redis-server, with the tokens of ``TOKENS`` in ``STREAMDELAY_TOKENS``, and waits
until ``/healthz`` answers 200. ``.url`` is its base URL, ``.token(name)`` a token,
``.auth(name)`` the ``Authorization`` header, ``.log_text()`` what it logged, ``.stop()`` sends
SIGTERM and waits. The ``web_server`` fixture (module scope, registered in conftest.py) serves
two fresh queues on the session's shared redis-server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[2]
# name -> (token, scopes); tokens are long random-looking strings so a test can grep logs
TOKENS = {
    "admin": ("adm-" + "a1" * 12, "read,write,consume,admin"),
    "reader": ("rdr-" + "b2" * 12, "read"),
    "writer": ("wrt-" + "c3" * 12, "write,read"),
    "consumer": ("cns-" + "d4" * 12, "consume"),
}
START_TIMEOUT = 30.0


def tokens_text(tokens: dict[str, tuple[str, str]]) -> str:
    """``name:token:scopes;...`` for STREAMDELAY_TOKENS."""
    return ";".join(f"{name}:{token}:{scopes}" for name, (token, scopes) in tokens.items())


class WebServer:
    """One ``streamdelay serve`` child process."""

    def __init__(self, redis_url: str, queues: Sequence[str], *extra: str,
                 tokens: dict[str, tuple[str, str]] | None = None, host: str = "127.0.0.1",
                 env: dict[str, str] | None = None) -> None:
        self.redis_url = redis_url
        self.queues = list(queues)
        self.extra = list(extra)
        self.tokens = TOKENS if tokens is None else tokens
        self.host = host
        self.env = env or {}
        self.port = 0
        self.dir = Path(tempfile.mkdtemp(prefix="streamdelay-web-"))
        self.log_path = self.dir / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:41234``."""
        return f"http://127.0.0.1:{self.port}"

    def token(self, name: str) -> str:
        """The token named ``name``."""
        return self.tokens[name][0]

    def auth(self, name: str) -> dict[str, str]:
        """The Authorization header of the token named ``name``."""
        return {"Authorization": f"Bearer {self.token(name)}"}

    def command(self) -> list[str]:
        """The command line."""
        args = [sys.executable, "-m", "streamdelay", "serve", "--url", self.redis_url,
                "--host", self.host, "--port", str(self.port), "--log-format", "json"]
        for name in self.queues:
            args += ["--queue", name]
        return args + self.extra

    def start(self) -> WebServer:
        """Start on a free port and wait for /healthz (a few tries: a port may be taken)."""
        for _ in range(3):
            self.port = free_port()
            env = {**os.environ, **self.env}
            env.pop("STREAMDELAY_TOKENS", None)
            if self.tokens:
                env["STREAMDELAY_TOKENS"] = tokens_text(self.tokens)
            env.update(self.env)
            with self.log_path.open("ab") as log:
                self.process = subprocess.Popen(self.command(), stdout=log, stderr=log,
                                                env=env, cwd=ROOT)
            if self._wait_healthy():
                return self
            self.stop()
        raise RuntimeError(f"streamdelay serve did not start:\n{self.log_text()[-3000:]}")

    def _wait_healthy(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        return False

    def log_text(self) -> str:
        """Everything the server wrote so far."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM, then wait (SIGKILL after ``timeout``); the exit code."""
        process, self.process = self.process, None
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        return process.returncode

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = "admin",
                headers: dict[str, str] | None = None, raw: bytes | None = None,
                timeout: float = 40.0) -> tuple[int, Any]:
        """One request with urllib: (status, decoded JSON body or None; text if not JSON)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        sent = {"Content-Type": "application/json"} if data is not None else {}
        if token is not None:
            sent.update(self.auth(token))
        sent.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as answer:
                status, payload = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, payload = exc.code, exc.read()
        if not payload:
            return status, None
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload.decode(errors="replace")

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="module")
def web_server(shared_redis: RedisServer) -> Iterator[WebServer]:
    """``streamdelay serve`` of two fresh queues (``.queues``) on the shared redis-server."""
    names = [f"web{uuid.uuid4().hex[:8]}", f"web{uuid.uuid4().hex[:8]}"]
    with WebServer(shared_redis.url, names) as server:
        yield server
