"""Slow and greedy clients against a real ``streamdelay serve`` (docs/security.md#limits-of-serve):
headers sent byte by byte, a body that never completes, a silent connection, more connections
than the cap, and unparsable HTTP, each on a real socket."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

TIMEOUT = 1.0  # --header-timeout and --body-timeout of the server under test
SLACK = 2.0  # a loaded machine answers a little late


@pytest.fixture(scope="module")
def strict_server(shared_redis: RedisServer) -> Iterator[WebServer]:
    """serve with one-second header and body timeouts."""
    with WebServer(shared_redis.url, [f"slow{uuid.uuid4().hex[:8]}"], "--header-timeout",
                   str(TIMEOUT), "--body-timeout", str(TIMEOUT)) as server:
        yield server


def _connect(server: WebServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _trickle(sock: socket.socket, data: bytes, every: float = 0.1) -> threading.Thread:
    """Send ``data`` one byte at a time in the background, until the server hangs up."""

    def run() -> None:
        for byte in data:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return
            time.sleep(every)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _until_closed(sock: socket.socket, limit: float) -> tuple[float, bytes]:
    """Seconds until the server closed the connection (EOF or reset), and what it sent."""
    started = time.monotonic()
    received = b""
    sock.settimeout(limit)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server held the connection for more than {limit} s ({received!r})")
    return time.monotonic() - started, received


def _read_answer(sock: socket.socket) -> bytes:
    """One whole answer (headers and a content-length body) off a kept-alive connection."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def _json_answer(received: bytes, status: int) -> dict[str, object]:
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), received
    assert "content-type: application/json" in [line.lower() for line in lines[1:]], received
    answer: dict[str, object] = json.loads(body)
    return answer


def _check_timeout_answer(received: bytes) -> None:
    """The 408 if it arrived before the close (a reset may beat it to the client)."""
    if received:
        error = _json_answer(received, 408)["error"]
        assert isinstance(error, dict) and error["code"] == "request_timeout", error


def test_headers_sent_byte_by_byte_are_cut_off(strict_server: WebServer) -> None:
    with contextlib.closing(_connect(strict_server)) as sock:
        _trickle(sock, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200)
        elapsed, received = _until_closed(sock, TIMEOUT + SLACK + 3)
    assert elapsed <= TIMEOUT + SLACK
    _check_timeout_answer(received)


def test_a_silent_connection_is_cut_off(strict_server: WebServer) -> None:
    with contextlib.closing(_connect(strict_server)) as sock:
        elapsed, received = _until_closed(sock, TIMEOUT + SLACK + 3)
    assert elapsed <= TIMEOUT + SLACK
    assert _json_answer(received, 408)["error"]["code"] == "request_timeout"  # type: ignore[index]


def test_a_body_that_never_completes_is_cut_off(strict_server: WebServer) -> None:
    queue = strict_server.queues[0]
    head = (f"POST /v1/queues/{queue}/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: "
            f"application/json\r\nContent-Length: 1000\r\n"
            f"Authorization: Bearer {strict_server.token('admin')}\r\n\r\n").encode()
    with contextlib.closing(_connect(strict_server)) as sock:
        sock.sendall(head)
        _trickle(sock, b'{"topic": "t", "body": "' + b"x" * 900)  # still sending, too slowly
        elapsed, received = _until_closed(sock, TIMEOUT + SLACK + 3)
    assert elapsed <= TIMEOUT + SLACK
    _check_timeout_answer(received)
    status, found = strict_server.request("GET", f"/v1/queues/{queue}/stats", token="reader")
    assert status == 200 and not found["topics"], found  # nothing was enqueued


def test_a_long_poll_outlives_the_read_timeouts(strict_server: WebServer) -> None:
    queue = strict_server.queues[0]
    started = time.monotonic()
    status, _ = strict_server.request("POST", f"/v1/queues/{queue}/topics/idle:reserve",
                                      {"group": "g", "wait_ms": 2500}, token="consumer")
    assert status == 204 and time.monotonic() - started >= 2.4


def test_keep_alive_requests_each_get_their_own_header_deadline(
        strict_server: WebServer) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with contextlib.closing(_connect(strict_server)) as sock:
        for _ in range(3):  # well within the keep-alive time, over 1 s in all
            sock.sendall(request)
            assert _read_answer(sock).startswith(b"HTTP/1.1 200 ")
            time.sleep(0.5)


def test_unparsable_http_is_answered_with_the_json_error_body(
        strict_server: WebServer) -> None:
    with contextlib.closing(_connect(strict_server)) as sock:
        sock.sendall(b"NOT HTTP AT ALL\x00\x01\r\n\r\n")
        _, received = _until_closed(sock, 10)
    error = _json_answer(received, 400)["error"]
    assert isinstance(error, dict) and error["code"] == "bad_request", error


def test_headers_without_end_are_refused_at_the_size_cap(strict_server: WebServer) -> None:
    with contextlib.closing(_connect(strict_server)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        with contextlib.suppress(OSError):  # the server may hang up while this is sent
            for number in range(2000):  # ~100 KiB of headers, fast: no timeout helps here
                sock.sendall(b"X-Filler-%d: %s\r\n" % (number, b"y" * 40))
        elapsed, received = _until_closed(sock, 10)
    assert elapsed < TIMEOUT / 2  # cut at the size, not at the deadline
    if received:
        error = _json_answer(received, 431)["error"]
        assert isinstance(error, dict) and error["code"] == "headers_too_large"


def test_connections_beyond_the_cap_get_503_and_the_others_are_served(
        shared_redis: RedisServer) -> None:
    cap = 4
    with WebServer(shared_redis.url, [f"cap{uuid.uuid4().hex[:8]}"], "--max-connections",
                   str(cap), "--header-timeout", "3") as server:
        held = [_connect(server) for _ in range(cap - 1)]  # silent: they hold their places
        try:
            time.sleep(0.3)
            # one place left: served
            assert server.request("GET", "/healthz", token=None)[0] == 200
            held.append(_connect(server))
            time.sleep(0.3)
            with contextlib.closing(_connect(server)) as extra:
                extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                _, received = _until_closed(extra, 10)
            error = _json_answer(received, 503)["error"]
            assert isinstance(error, dict) and error["code"] == "too_many_connections"
            assert b"retry-after: 1" in received.lower()
            held.pop().close()  # a place frees: the service answers again
            time.sleep(0.3)
            assert server.request("GET", "/healthz", token=None)[0] == 200
            for sock in held:  # and the silent ones end at their header deadline
                elapsed, _ = _until_closed(sock, 3 + SLACK + 3)
                assert elapsed <= 3 + SLACK
        finally:
            for sock in held:
                sock.close()


def test_a_body_answered_early_does_not_count_as_the_next_requests_headers(
        strict_server: WebServer) -> None:
    """A request answered before its body was read (here a 401: no token) leaves its body to
    arrive afterwards; those bytes are the old request's body, not the next request's headers
    (schemathesis met a 431 on a small request after a big one on a kept-alive connection)."""
    body = b"[" + b"1," * 100_000 + b"1]"
    with contextlib.closing(_connect(strict_server)) as sock:
        sock.sendall(b"POST /v1/queues/x/jobs:batch HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        first = _read_answer(sock)
        assert first.startswith(b"HTTP/1.1 401 "), first
        sock.sendall(body)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        sock.settimeout(10)
        with contextlib.suppress(OSError):
            while b"\r\n\r\n" not in received:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
    # either the next request is served, or the server closed the connection (it may refuse
    # to read a body it did not want); never a 431 for 40 bytes of headers
    assert b" 431 " not in received.split(b"\r\n", 1)[0], received
    if received:
        assert received.startswith(b"HTTP/1.1 200 "), received
