"""Browser attacks on a service without tokens (docs/http.md#security).

With no token configured the service listens on loopback only and every request may do
everything. Loopback alone does not stop a web page in the user's browser: a page on another
site can send "simple" cross-site requests (a POST without a body, or with a ``text/plain``
one) to ``http://127.0.0.1:8080``, and a DNS-rebinding page can even read the answers under its
own host name. ``LocalOnly`` (installed only when no token is configured) refuses both:

- a ``Host`` header that is not a loopback name or address (DNS rebinding): 403, field ``host``;
- a state-changing request whose ``Origin`` is not a loopback origin, or whose
  ``Sec-Fetch-Site`` says another site sent it: 403, field ``origin``.

Clients that are not browsers (curl, PHP, Node's fetch) send neither header: unaffected.
With tokens, bearer tokens cannot be sent cross-site without a preflight the service never
grants (it sets no CORS headers), and the dashboard's cookie is SameSite=Strict plus CSRF.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import msgspec

from .http_errors import ErrorBody, ErrorDetail
from .serve_settings import is_loopback

SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_encoder = msgspec.json.Encoder()


def _hostname(host: str) -> str:
    """``127.0.0.1:8080`` -> ``127.0.0.1``; ``[::1]:8080`` -> ``::1``."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def refusal(headers: dict[str, str], method: str) -> tuple[str, str] | None:
    """(field, message) when a request to an open service must be refused, else None."""
    host = headers.get("host")
    if host is not None and not is_loopback(_hostname(host.strip())):
        return "host", (f"host: {host[:80]!r} is not a loopback name; without tokens the "
                        f"service answers only requests addressed to this machine")
    if method in SAFE:
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return "origin", "origin: a cross-site request may not change a service without tokens"
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        name = urlsplit(origin).hostname or ""
        if not is_loopback(name):
            return "origin", (f"origin: {origin[:80]!r} may not change a service without "
                              f"tokens")
    elif origin == "null":
        return "origin", "origin: an opaque origin may not change a service without tokens"
    return None


class LocalOnly:
    """ASGI wrapper refusing requests a browser was tricked into (see the module doc)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Refuse with 403, or pass the request on."""
        if scope["type"] == "http":
            headers = {key.decode("latin-1"): value.decode("latin-1")
                       for key, value in scope.get("headers", ())
                       if key in (b"host", b"origin", b"sec-fetch-site")}
            found = refusal(headers, scope.get("method", "GET"))
            if found is not None:
                field, message = found
                body = _encoder.encode(ErrorBody(ErrorDetail("forbidden", message, field)))
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)
