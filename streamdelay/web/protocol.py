"""The connection limits of ``streamdelay serve``, at uvicorn's protocol layer
(docs/security.md#limits-of-serve).

uvicorn (0.54) closes an idle keep-alive connection (``timeout_keep_alive``) and can answer 503
above a number of requests (``limit_concurrency``), but it has no timeout for *reading* a
request: its keep-alive timer is unset by every byte received and none runs before the first
request, so a client sending its headers byte by byte, or a body that never ends, held its
connection for ever (uvicorn issue #157 lists both timeouts as not done). An ASGI middleware
cannot help, as it runs only once the headers are parsed. So ``guarded_protocol`` subclasses
uvicorn's HTTP protocol (httptools, else h11) and adds:

- a header deadline: the next request's headers must be in ``header_timeout`` seconds after
  the connection opened or the previous answer ended; else 408 and the connection is closed;
- a body deadline: the body must be in ``body_timeout`` seconds after the headers; else 408
  (unless an answer started) and the connection is closed, the app seeing a disconnect. Once
  a request is read no deadline runs, so a long poll is never cut;
- a header size cap: a request whose line and headers pass ``MAX_HEADER_BYTES`` is answered
  431 and closed (httptools, unlike h11, buffers headers without a bound);
- a connection cap: a connection beyond ``max_connections`` open ones is answered 503 at once
  and closed, before anything of it is parsed; the open ones are served as before;
- every answer the protocol writes itself (400 for unparsable HTTP, 408, 431, 503) carries the JSON
  error body of every other error (docs/http.md#errors), never uvicorn's plain text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from http import HTTPStatus
from typing import Any

from .serve_settings import ServeSettings

log = logging.getLogger("streamdelay.web")
MAX_HEADER_BYTES = 64 * 1024  # request line and headers; 431 beyond
LINGER_S = 1.0  # a refused connection is half-closed, read and dropped for this long
REFUSAL_LOG_EVERY_S = 10.0
_refusals = [float("-inf")]  # when a refusal was last logged


def raw_answer(status: int, code: str, message: str, retry_after: int | None = None) -> bytes:
    """A whole HTTP/1.1 answer with the JSON error body, closing the connection."""
    body = json.dumps({"error": {"code": code, "message": message, "field": None}}).encode()
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "content-type: application/json",
             f"content-length: {len(body)}", "connection: close"]
    if retry_after is not None:
        lines.append(f"retry-after: {retry_after}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def guarded_protocol(settings: ServeSettings) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (httptools, else h11) with the deadlines and the cap of
    ``settings``."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    guarded: type[asyncio.Protocol] = type(
        "GuardedProtocol", (ReadDeadlines, AutoHTTPProtocol), {"settings": settings})
    return guarded


# the mixin's base at type-checking time is "any uvicorn protocol"; at run time it is object,
# and guarded_protocol puts uvicorn's class after it in the MRO
_Protocol: Any = object


class ReadDeadlines(_Protocol):  # type: ignore[misc]
    """What ``guarded_protocol`` adds to uvicorn's protocol: read deadlines, a connection
    cap and JSON answers (the module docstring)."""

    settings: ServeSettings

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._reading = ""  # what the deadline waits for: "headers", "body" or ""
        self._seen: Any = None  # the request cycle whose headers were read last
        self._refused = False
        self._header_bytes = 0  # bytes received since the last header block ended
        self._in_body = False  # the parser is inside a request's body (headers complete)

    def connection_made(self, transport: Any) -> None:
        """Refuse the connection beyond the cap, else start the header deadline."""
        if len(self.server_state.connections) >= self.settings.max_connections:
            self._refuse(transport)
            return
        super().connection_made(transport)
        self._arm("headers")

    def data_received(self, data: bytes) -> None:
        """Parse as uvicorn does, then move the deadline on."""
        if self._refused:
            return
        # the cap is for a header block that does not end. A chunk that starts inside a body is
        # that body's (a request answered early, before its body came, still sends it); a
        # chunk that starts outside one counts until a header block ends in it
        if not self._in_body:
            self._header_bytes += len(data)
        super().data_received(data)
        self._follow()
        if not self._in_body and self._header_bytes > MAX_HEADER_BYTES:
            self._close_with(raw_answer(
                431, "headers_too_large", f"the request line and headers passed "
                f"{MAX_HEADER_BYTES} bytes"))

    def on_headers_complete(self) -> None:
        """The parser ended a header block: its bytes stop counting; a body may follow."""
        self._header_bytes = 0
        self._in_body = True
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        """The parser ended a request (its body included)."""
        self._in_body = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        """After an answer, the next request's headers have ``header_timeout``."""
        super().on_response_complete()
        waiting = self._seen is not None and not self._seen.response_complete
        if not waiting and not self.transport.is_closing():
            self._arm("headers")

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the deadline with the connection."""
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """Unparsable HTTP: the JSON error body, then close."""
        self._close_with(raw_answer(400, "bad_request", f"invalid HTTP request: {msg}"))

    def _close_with(self, answer: bytes) -> None:
        """Write a whole answer of the protocol's own, then close."""
        self._disarm()
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _follow(self) -> None:
        """Arm the body deadline when a request's headers came in, disarm it when its body
        is complete."""
        cycle = self.cycle
        if cycle is None:
            return
        if cycle is not self._seen:  # a new request's headers are in
            self._seen = cycle
            self._disarm()
            if cycle.more_body:
                self._arm("body")
        elif self._reading == "body" and not cycle.more_body:
            self._disarm()

    def _limit(self, reading: str) -> float:
        return self.settings.header_timeout if reading == "headers" \
            else self.settings.body_timeout

    def _arm(self, reading: str) -> None:
        self._disarm()
        self._reading = reading
        self._deadline = self.loop.call_later(self._limit(reading), self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._reading = ""

    def _expired(self) -> None:
        """The deadline passed: answer 408 if nothing was answered, then close."""
        reading, self._deadline, self._reading = self._reading, None, ""
        if self.transport is None or self.transport.is_closing():
            return
        cycle = self._seen if reading == "body" else None
        option = "--header-timeout" if reading == "headers" else "--body-timeout"
        if cycle is None or not cycle.response_started:
            self.transport.write(raw_answer(
                408, "request_timeout", f"the request's {reading} did not arrive within "
                f"{self._limit(reading):g} s ({option})"))
        if cycle is not None:  # the app's next receive() is a disconnect, its sends dropped
            cycle.disconnected = True
            cycle.message_event.set()
        log.info("closed a connection from %s: its request's %s took longer than %g s (%s)",
                 _peer(self.client), reading, self._limit(reading), option)
        self.transport.close()

    def _refuse(self, transport: Any) -> None:
        """503 at once; half-close, and close after ``LINGER_S`` (the client reads the answer
        instead of a reset for the request it sent)."""
        self._refused = True
        self.transport = transport
        cap = self.settings.max_connections
        transport.write(raw_answer(
            503, "too_many_connections", f"this service holds {cap} connections, the most it "
            f"takes (--max-connections); retry later", 1))
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER_S, transport.close)
        now = time.monotonic()
        if now - _refusals[0] >= REFUSAL_LOG_EVERY_S:  # a flood logs a line per interval
            _refusals[0] = now
            log.warning("refused a connection from %s: %d connections open "
                        "(--max-connections)", _peer(transport.get_extra_info("peername")), cap)


def _peer(address: Any) -> str:
    """``host:port`` of a peer address (for the log)."""
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return "?"
