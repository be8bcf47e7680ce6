"""How many long polls a served queue takes at once (docs/http.md#capacity).

A waiting ``:reserve`` holds one connection of its queue's reserve pool, which ``serve`` sizes
to ``--max-polls`` (``ServeSettings.queue_settings``). ``PollGate`` counts the polls in flight
per served queue and answers the one beyond that count at once with 429 ``busy`` and
``Retry-After``: the client comes back later, and no poll ever waits for a pool connection or
fails with a 503 that blames Redis. Only a caller allowed to consume is counted or refused;
any other request passes through to the routes, which answer 401, 403 or 404 as usual.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .auth import SessionSigner, resolve
from .http_errors import ErrorBody, ErrorDetail
from .serve_settings import ServeSettings

_RESERVE = re.compile(r"^/v1/queues/([^/]+)/topics/[^/]+:reserve$")
RESERVE_TEMPLATE = "/v1/queues/{queue}/topics/{topic}:reserve"  # the metrics' route label
RETRY_AFTER_S = 1  # a poll slot frees as soon as any poll answers: come back soon
_encoder = msgspec.json.Encoder()


class PollGate:
    """ASGI wrapper: at most ``settings.max_polls`` ``:reserve`` calls in flight per served
    queue; the next gets 429 ``busy`` with ``Retry-After``."""

    def __init__(self, app: Any, settings: ServeSettings, queues: dict[str, Any],
                 signer: SessionSigner) -> None:
        self.app = app
        self.settings = settings
        self.signer = signer
        self.capacity = settings.max_polls
        self.active = dict.fromkeys(queues, 0)  # polls in flight per served queue

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Count a consumer's poll of a served queue, or refuse it when the queue is full."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        found = _RESERVE.match(path) if scope.get("method") == "POST" else None
        queue = found.group(1) if found is not None else None
        if queue not in self.active or not self._consumer(scope):
            await self.app(scope, receive, send)
            return
        assert queue is not None
        if self.active[queue] >= self.capacity:
            scope["path_template"] = RESERVE_TEMPLATE
            await _busy(send, queue, self.capacity)
            return
        self.active[queue] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active[queue] -= 1

    def _consumer(self, scope: Any) -> bool:
        """True when the request's principal holds the ``consume`` scope."""
        principal, _ = resolve(scope, self.settings.tokens, self.signer)
        return principal is not None and principal.allows("consume")


async def _busy(send: Any, queue: str, capacity: int) -> None:
    """The 429 answer of a poll beyond capacity."""
    body = _encoder.encode(ErrorBody(ErrorDetail(
        "busy", f"queue {queue!r} has {capacity} long polls waiting, the most this service "
        f"takes (--max-polls); retry after {RETRY_AFTER_S} s", None)))
    await send({"type": "http.response.start", "status": 429, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode())]})
    await send({"type": "http.response.body", "body": body})
