"""A lean HTTP/1.1 load generator for the HTTP benchmark (``benchmarks/web/http_bench.py``).

Raw HTTP/1.1 over asyncio streams, keep-alive, several connections each with one request in
flight (no pipelining: a real client waits for its answer): the request head is built once and
only the body changes, the answer is read by ``Content-Length`` (or chunks), so the client
spends a few tens of µs of CPU per request and the server is what bounds the figures. Its own
CPU time is measured (``process_time``) so the report can say how much of the 2 cores it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

BodyOf = Callable[[int], bytes]
T = TypeVar("T")


def stack() -> str:
    """The HTTP parser and event loop uvicorn picks in this environment (``--http auto``,
    ``--loop auto``): httptools and uvloop when installed, else h11 and asyncio."""
    parser = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"{parser} + {loop}"


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """Run the client on uvloop when it is installed (less client CPU per request)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(work)
    if not hasattr(asyncio, "Runner"):  # Python 3.10
        return asyncio.run(work)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        result: T = runner.run(work)
    return result


class HttpError(Exception):
    """The server answered with a status the benchmark did not expect."""


class Connection:
    """One keep-alive HTTP/1.1 connection with one request in flight at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 host: str, token: str) -> None:
        self.reader, self.writer = reader, writer
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        self._common = (f"Host: {host}\r\nAccept: application/json\r\n"
                        f"Content-Type: application/json\r\n{auth}").encode()

    @classmethod
    async def open(cls, host: str, port: int, token: str = "") -> Connection:
        """Connect to ``host:port``."""
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, f"{host}:{port}", token)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """Send one request and read its whole answer: (status, body)."""
        self.writer.write(b"%s %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (
            method.encode(), path.encode(), self._common, len(body), body))
        line = await self.reader.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        status = int(line.split(b" ", 2)[1])
        length, chunked = -1, False
        while True:
            header = await self.reader.readline()
            if header in (b"\r\n", b"\n", b""):
                break
            name, _, value = header.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if chunked:
            return status, await self._chunks()
        if length < 0:
            return status, b""  # 204 / 304: no body
        return status, await self.reader.readexactly(length)

    async def _chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await self.reader.readline()).split(b";")[0], 16)
            if size == 0:
                await self.reader.readline()
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readline()

    async def close(self) -> None:
        """Close the connection."""
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


@dataclass
class LoadResult:
    """What one load run did: requests, wall seconds, client CPU seconds, latencies (ms)."""

    requests: int
    seconds: float
    client_cpu: float
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    @property
    def client_share(self) -> float:
        """The client's CPU time as a share of one core over the run."""
        return self.client_cpu / self.seconds if self.seconds > 0 else 0.0


async def drive(connections: Sequence[Connection], requests: int, method: str, path: str,
                body_of: BodyOf, expect: tuple[int, ...] = (200, 201)) -> LoadResult:
    """``requests`` requests spread over ``connections``, each connection sending its next one
    as soon as its answer came (closed loop); raises ``HttpError`` on an unexpected status."""
    next_index = 0
    latencies: list[float] = []
    statuses: dict[int, int] = {}

    async def one_connection(conn: Connection) -> None:
        nonlocal next_index
        while next_index < requests:
            index = next_index
            next_index += 1
            sent = time.perf_counter()
            status, answer = await conn.request(method, path, body_of(index))
            latencies.append((time.perf_counter() - sent) * 1000)
            statuses[status] = statuses.get(status, 0) + 1
            if status not in expect:
                raise HttpError(f"{method} {path}: HTTP {status} {answer[:300]!r}")

    cpu, began = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one_connection(c) for c in connections))
    return LoadResult(requests, time.perf_counter() - began, time.process_time() - cpu,
                      latencies, statuses)


async def open_all(host: str, port: int, count: int, token: str = "") -> list[Connection]:
    """``count`` keep-alive connections."""
    return list(await asyncio.gather(*(Connection.open(host, port, token)
                                       for _ in range(count))))


async def close_all(connections: Sequence[Connection]) -> None:
    """Close every connection."""
    await asyncio.gather(*(c.close() for c in connections))


async def raw_app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                  send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """The HTTP stack's own ceiling: a bare ASGI app that reads the body and answers 201 with a
    small JSON object, served by the same uvicorn as ``streamdelay serve`` (no framework, no
    Redis)."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = bool(message.get("more_body"))
    await send({"type": "http.response.start", "status": 201,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body",
                "body": b'{"id":"x","due":1,"created":true}'})
