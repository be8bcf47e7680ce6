"""``streamdelay.web.asgi(...)``: the service of ``streamdelay serve`` (JSON API, dashboard,
``/metrics``, ``/healthz``) as an ASGI app to mount in a FastAPI, Starlette or Litestar app
under any path (docs/integrations.md#mounting-the-dashboard).

The app inside is the one ``streamdelay serve`` runs (``app.create_app``), unchanged: it sees
itself at ``/``. This wrapper translates at the edge (docs/design.md#web):

- a request's path loses the mount's prefix (``root_path``; hosts that strip it themselves,
  as Litestar's mounts do, are left as they are);
- the site's own links in HTML (``href``, ``src``, ``action``, ``data-live`` values that start
  with one ``/``) and ``Location`` headers gain it. Values a page prints come autoescaped
  (``"`` as ``&#34;``), so only the templates' attributes match;
- its Redis connections, dispatchers and metrics start with the host's lifespan when the host
  forwards it (``lifespan``), else on the first request: Starlette and FastAPI do not run the
  lifespan of a mounted app.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# an attribute of the site's own HTML whose value is a path of this site ("//x" is another host)
_LINK = re.compile(rb'(\s(?:href|src|action|data-live)=")/(?!/)')


def prefix_of(scope: Scope) -> str:
    """The path the app is mounted under (``root_path``), without a trailing ``/``."""
    return str(scope.get("root_path") or "").rstrip("/")


def local_scope(scope: Scope, prefix: str) -> Scope:
    """``scope`` as the app at ``/`` sees it: the prefix taken off ``path`` and ``raw_path``,
    ``root_path`` empty. A path the host already stripped stays as it is."""
    inner = dict(scope)
    path = str(scope.get("path", ""))
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        inner["path"] = path[len(prefix):] or "/"
        raw = scope.get("raw_path")
        encoded = quote(prefix).encode()
        if isinstance(raw, bytes) and raw.startswith(encoded):
            inner["raw_path"] = raw[len(encoded):] or b"/"
    inner["root_path"] = ""
    return inner


def relocated(prefix: str, send: Send) -> Send:
    """``send`` with the site's links in HTML bodies and ``Location`` headers moved under
    ``prefix`` (an HTML page is held until its last chunk: pages are small)."""
    at = quote(prefix).encode()
    in_html = html.escape(quote(prefix)).encode()
    held: list[Message] = []
    body: list[bytes] = []

    async def sending(message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            headers = [(name, at + value if name.lower() == b"location" and
                        value.startswith(b"/") and not value.startswith(b"//") else value)
                       for name, value in message.get("headers", [])]
            message = {**message, "headers": headers}
            page = any(name.lower() == b"content-type" and value.startswith(b"text/html")
                       for name, value in headers)
            if page:
                held.append(message)
                return
        elif kind == "http.response.body" and held:
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            text = _LINK.sub(lambda m: m.group(1) + in_html + b"/", b"".join(body))
            start = held.pop()
            start["headers"] = [(n, v) for n, v in start["headers"]
                                if n.lower() != b"content-length"]
            start["headers"].append((b"content-length", str(len(text)).encode()))
            await send(start)
            message = {"type": "http.response.body", "body": text, "more_body": False}
        await send(message)

    return sending


class MountedService:
    """The ASGI app ``asgi()`` returns: ``app`` (``create_app``'s Litestar app) relocated under
    the path it is mounted at, started by the host's lifespan or on first use."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = app.state  # settings, service, queues, ... (web/app.py)
        self._started = False
        self._startup: asyncio.Future[None] | None = None
        self._inbox: asyncio.Queue[Message] | None = None
        self._outbox: asyncio.Queue[Message] | None = None
        self._running: asyncio.Future[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one connection; a ``lifespan`` scope starts and stops the service."""
        if scope["type"] == "lifespan":
            await self._lifespan_protocol(receive, send)
            return
        await self.start()
        prefix = prefix_of(scope)
        if not prefix:
            await self.app(local_scope(scope, ""), receive, send)
            return
        await self.app(local_scope(scope, prefix), receive, relocated(prefix, send))

    async def start(self) -> None:
        """Open the connections and start the dispatchers and metrics (once). Requests that
        come while it starts wait for the same start; one cancelled (its client gone) does not
        cancel it."""
        if self._started:
            return
        if self._startup is None or self._startup.done():  # a failed start is tried again
            self._startup = asyncio.ensure_future(self._start())
        await asyncio.shield(self._startup)

    async def _start(self) -> None:
        # the Litestar app's own lifespan, driven here: its startup hooks as serve runs them
        self._inbox, self._outbox = asyncio.Queue(), asyncio.Queue()
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._running = asyncio.ensure_future(self.app(scope, self._inbox.get,
                                                       self._outbox.put))
        await self._inbox.put({"type": "lifespan.startup"})
        reply = await self._outbox.get()
        if reply["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"streamdelay service failed to start: "
                               f"{reply.get('message', '')}")
        self._started = True

    async def stop(self) -> None:
        """Stop the dispatchers, flush the metrics and close every connection pool (after a
        start in progress has ended)."""
        if self._startup is not None and not self._startup.done():
            with contextlib.suppress(Exception):
                await self._startup
        if not self._started or self._inbox is None or self._outbox is None:
            return
        self._started = False
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._outbox.get()
        if self._running is not None:
            await self._running
        self._startup = self._running = None

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any = None) -> AsyncIterator[None]:
        """The host's lifespan function (``FastAPI(lifespan=service.lifespan)``), or
        ``async with service.lifespan(): ...`` inside the host's own."""
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    async def _lifespan_protocol(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol, for a host that forwards it (or for uvicorn)."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.start()
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
