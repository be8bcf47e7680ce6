"""CSRF tokens of the dashboard's forms, tied to the session (docs/security.md#csrf).

Every state-changing request outside the bearer-token routes (``/v1``, ``/healthz``,
``/metrics``) must carry the form field ``_csrf_token`` (or the header ``X-CSRFToken``) equal
to the token of its own cookies:

- with a session cookie, an HMAC of that cookie's value: the token of one session is worth
  nothing with another, so a token and cookie pair fetched anonymously (``GET /login``) and
  planted in a victim's browser next to the victim's session does not pass;
- without one (the login form, a service without tokens), an HMAC of a random ``csrftoken``
  cookie, set on the first safe request (a plain double-submit token).

With ``--secure-cookies`` the cookie is ``__Host-csrftoken`` (Secure, Path=/, no Domain), which
a sibling subdomain or a plain-HTTP page cannot set. The token of a page is in the scope state
Litestar's templates read (``pages.csrf_token``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from typing import Any

from litestar.datastructures.cookie import Cookie
from litestar.exceptions import PermissionDeniedException
from litestar.utils.scope.state import ScopeState

from .auth import SAFE_METHODS, cookie_of, host_prefixed

CSRF_COOKIE = "csrftoken"
CSRF_FIELD = "_csrf_token"
CSRF_HEADER = b"x-csrftoken"
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


def csrf_cookie_name(secure: bool) -> str:
    """``__Host-csrftoken`` with ``--secure-cookies``, else ``csrftoken``."""
    return host_prefixed(CSRF_COOKIE, secure)


class SessionCsrf:
    """ASGI middleware (inside Litestar): sets the page's token on safe requests, refuses
    (403) any other request whose token is not the one of its cookies."""

    def __init__(self, app: Any, secret: bytes, session_cookie: str, secure: bool,
                 exempt: list[str]) -> None:
        self.app = app
        self._key = hashlib.sha256(b"streamdelay-csrf\0" + secret).digest()
        self.session_cookie = session_cookie
        self.cookie = csrf_cookie_name(secure)
        self.secure = secure
        self.exempt = re.compile("|".join(exempt))

    def token(self, binding: bytes) -> str:
        """The form token of ``binding`` (a session or a ``csrftoken`` cookie value)."""
        digest = hmac.new(self._key, binding, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def _binding(self, scope: Any) -> bytes | None:
        session = cookie_of(scope, self.session_cookie)
        if session:
            return b"session\0" + session.encode()
        anonymous = cookie_of(scope, self.cookie)
        return b"anonymous\0" + anonymous.encode() if anonymous else None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Check or set the token, then call the app."""
        if scope["type"] != "http" or self.exempt.match(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        binding = self._binding(scope)
        if scope.get("method") in SAFE_METHODS:
            fresh = None
            if binding is None:
                fresh = secrets.token_urlsafe(32)
                binding = b"anonymous\0" + fresh.encode()
            ScopeState.from_scope(scope).csrf_token = self.token(binding)
            await self.app(scope, receive, send if fresh is None else self._setting(send, fresh))
            return
        sent = await self._sent_token(scope, receive)
        if binding is None or sent is None or not hmac.compare_digest(
                sent.encode(), self.token(binding).encode()):
            raise PermissionDeniedException(
                "CSRF token verification failed: reload the page and send its form again")
        ScopeState.from_scope(scope).csrf_token = sent
        await self.app(scope, receive, send)

    async def _sent_token(self, scope: Any, receive: Any) -> str | None:
        """The token of the header, else of the form (read through Litestar's request, which
        keeps the body for the route)."""
        for key, value in scope.get("headers", ()):
            if key == CSRF_HEADER:
                return str(value.decode("latin-1"))
        request = scope["litestar_app"].request_class(scope=scope, receive=receive)
        if request.content_type[0] not in _FORMS:
            return None
        found = (await request.form()).get(CSRF_FIELD)
        return found if isinstance(found, str) else None

    def _setting(self, send: Any, value: str) -> Any:
        """``send`` that adds the ``csrftoken`` cookie to the answer."""
        header = Cookie(key=self.cookie, value=value, path="/", secure=self.secure,
                        httponly=True, samesite="strict").to_header(header="")

        async def wrapped(message: Any) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"],
                                      (b"set-cookie", header.encode("latin-1"))]
            await send(message)

        return wrapped
