"""Who is calling: bearer tokens, the dashboard's signed session cookie, and the scope guards.

``AuthMiddleware`` resolves every request to a ``Principal`` (or None) in ``scope["user"]``;
the guards made by ``requires(scope)`` turn that into 401 (nobody) or 403 (wrong scope).

- ``Authorization: Bearer TOKEN`` works on every route; a wrong token is a 401 even when a
  session cookie is present.
- The session cookie (``streamdelay_session``, ``__Host-streamdelay_session`` with
  ``--secure-cookies``; HttpOnly, SameSite=Strict, HMAC-SHA256 signed with the settings'
  secret, expiring) carries the token's *name* and an expiry, never the token. It
  authenticates the dashboard's routes, whose state-changing requests pass the session-bound
  CSRF check (``csrf.py``), and only the safe (GET/HEAD) requests of ``/v1``: the ``/v1``
  routes are exempt from CSRF, so a cookie must never make a state change there
  (docs/http.md#security).
- With no token configured every request is ``ANONYMOUS`` (all scopes): the service then
  listens on loopback only (``ServeSettings.check_bind``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler
from litestar.response import Response
from litestar.types import ASGIApp, Receive, Scope, Send

from .tokens import ANONYMOUS, Principal, TokenTable

SESSION_COOKIE = "streamdelay_session"
API_PREFIX = "/v1"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SCOPE_OPT = "streamdelay_scope"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="streamdelay"'}


def host_prefixed(name: str, secure: bool) -> str:
    """``__Host-<name>`` when cookies are Secure (``--secure-cookies``): a browser accepts such
    a cookie only with Secure, Path=/ and no Domain, so neither a sibling subdomain nor a page
    over plain HTTP can set it (docs/security.md#csrf)."""
    return f"__Host-{name}" if secure else name


class SessionSigner:
    """Signs and checks session cookie values: ``name.expiry.signature`` (base64url); the
    cookie's name is ``cookie``.

    With ``tokens``, the signature also covers the digest of the token the session logged in
    with (never in the cookie): once that token is no longer the name's (rotated, removed),
    the cookie no longer verifies and the session ends (docs/security.md#dashboard-sessions).
    """

    def __init__(self, secret: bytes, max_age: int, tokens: TokenTable | None = None,
                 cookie: str = SESSION_COOKIE) -> None:
        self._key = hashlib.sha256(b"streamdelay-session\0" + secret).digest()
        self.max_age = max_age
        self._tokens = tokens
        self.cookie = cookie

    def _binding(self, name: str) -> bytes | None:
        """What a session of ``name`` is bound to: its current token's digest (None: no
        such name)."""
        return b"" if self._tokens is None else self._tokens.fingerprint(name)

    def _mac(self, payload: str, binding: bytes) -> str:
        digest = hmac.new(self._key, payload.encode() + b"\0" + binding,
                          hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def sign(self, name: str, now: float | None = None) -> str:
        """A cookie value for the principal ``name``, valid ``max_age`` seconds (and while
        the name keeps its token)."""
        expires = int((time.time() if now is None else now) + self.max_age)
        encoded = base64.urlsafe_b64encode(name.encode()).rstrip(b"=").decode()
        payload = f"{encoded}.{expires}"
        return f"{payload}.{self._mac(payload, self._binding(name) or b'')}"

    def verify(self, value: str, now: float | None = None) -> str | None:
        """The name in a genuine, unexpired cookie value made with the name's current token;
        None for anything else."""
        parts = value.split(".")
        if len(parts) != 3:
            return None
        encoded, expires, mac = parts
        try:
            name = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
            expiry = int(expires)
        except (ValueError, UnicodeDecodeError):
            return None
        binding = self._binding(name)
        if binding is None or not hmac.compare_digest(mac, self._mac(f"{encoded}.{expires}",
                                                                     binding)):
            return None
        return name if expiry >= (time.time() if now is None else now) else None


def _bearer(scope: Scope) -> str | None:
    """The token of the Authorization header ('' for a header that is not a bearer token)."""
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if kind.lower() == "bearer" else ""
    return None


def cookie_of(scope: Scope, name: str) -> str | None:
    """The value of the request's cookie ``name`` (None: not sent)."""
    for key, value in scope.get("headers", ()):
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                cookie_name, _, cookie_value = part.strip().partition("=")
                if cookie_name == name:
                    return cookie_value
    return None


def resolve(scope: Scope, tokens: TokenTable, signer: SessionSigner) -> tuple[Principal | None,
                                                                                str]:
    """The principal of a request and how it was found: ``open`` (no tokens configured),
    ``bearer``, ``session``, ``bad-token`` or ``none``."""
    if not tokens.configured:
        return ANONYMOUS, "open"
    token = _bearer(scope)
    if token is not None:
        principal = tokens.authenticate(token)
        return (principal, "bearer") if principal is not None else (None, "bad-token")
    value = cookie_of(scope, signer.cookie)
    if value:
        path: str = scope.get("path", "")
        if path.startswith(API_PREFIX + "/") and scope.get("method") not in SAFE_METHODS:
            return None, "none"  # /v1 is CSRF-exempt: a cookie never changes state there
        name = signer.verify(value)
        principal = tokens.principal(name) if name is not None else None
        if principal is not None:
            return principal, "session"
    return None, "none"


class AuthMiddleware:
    """Puts the request's principal (or None) in ``scope["user"]`` and how in
    ``scope["auth"]``; it rejects nothing itself (the guards do)."""

    def __init__(self, app: ASGIApp, tokens: TokenTable, signer: SessionSigner) -> None:
        self.app = app
        self.tokens = tokens
        self.signer = signer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Resolve the principal, check the route's ``opt["scope"]`` if it has one, then call
        the app."""
        if scope["type"] in ("http", "websocket"):
            principal, how = resolve(scope, self.tokens, self.signer)
            scope["user"] = principal
            scope["auth"] = how
            handler = scope.get("route_handler")
            needed = handler.opt.get(SCOPE_OPT) if handler is not None else None
            if needed is not None:
                check(principal, how, needed)
        await self.app(scope, receive, send)


def principal_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Principal | None:
    """The principal of a request (None: not authenticated)."""
    user = connection.scope.get("user")
    return user if isinstance(user, Principal) else None


def check(principal: Principal | None, how: str, scope_name: str) -> None:
    """401 without a valid token or session, 403 without ``scope_name``."""
    if principal is None:
        raise NotAuthorizedException(
            "the bearer token is not valid" if how == "bad-token" else
            "authentication required: send Authorization: Bearer TOKEN", headers=_CHALLENGE)
    if not principal.allows(scope_name):
        raise PermissionDeniedException(
            f"the token {principal.name!r} lacks the {scope_name!r} scope",
            extra={"field": "scope"})


def needs(scope_name: str) -> dict[str, str]:
    """Route options that make ``AuthMiddleware`` require ``scope_name``:
    ``@get(..., opt=needs("read"))``. The check runs in the middleware, without the copy of the
    route handler Litestar makes for every guard call (the JSON API's routes use it)."""
    return {SCOPE_OPT: scope_name}


def requires(scope_name: str) -> Any:
    """A route guard doing the same check as ``needs`` (for routes that prefer guards)."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler
                    ) -> None:  # async: Litestar runs a plain def guard in a thread
        check(principal_of(connection), str(connection.scope.get("auth", "none")), scope_name)

    guard.__name__ = f"requires_{scope_name}"
    return guard


def start_session(response: Response[Any], principal: Principal, signer: SessionSigner,
                  secure: bool) -> None:
    """Set the signed session cookie of ``principal`` on ``response`` (the dashboard's login)."""
    response.set_cookie(signer.cookie, signer.sign(principal.name), max_age=signer.max_age,
                        path="/", httponly=True, samesite="strict", secure=secure)


def end_session(response: Response[Any], signer: SessionSigner) -> None:
    """Clear the session cookie (the dashboard's logout)."""
    response.delete_cookie(signer.cookie, path="/")
