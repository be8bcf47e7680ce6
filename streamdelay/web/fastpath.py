"""The hot requests, answered before Litestar routes them: the one-job enqueue
(``POST /v1/queues/{queue}/jobs``) and a consumer's ack, fail and touch.

Producers and consumers send these most, and Litestar's per-request work (routing, signature
parsing, the response objects) cost about half of a one-job enqueue's server CPU (py-spy; the
fast path took it from ~240 to ~120 µs per request). This ASGI wrapper answers them with the
same parts the Litestar routes use: the same principal and scope check (``auth.resolve``,
``auth.check``), body limit, strict decoding (``bodies.decode_bytes``), queue lookup, library
calls (``jobs.enqueue_job``, ``consumers.settle``) and error description
(``errors.describe``), so the two cannot answer differently; the routes stay registered for the
OpenAPI document (docs/design.md#web). Any other request passes through.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar.exceptions import HTTPException

from .api.api_models import AckBody, EnqueueBody, FailBody, TouchBody
from .api.bodies import decode_bytes, required
from .api.common import lookup
from .api.consumers import settle
from .api.job_routes import enqueue_job
from .auth import SessionSigner, check, resolve
from .http_errors import ErrorBody, ErrorDetail, describe
from .metrics import HttpMetrics
from .serve_settings import ServeSettings

_ENQUEUE = re.compile(r"^/v1/queues/([^/]+)/jobs$")
_SETTLE = re.compile(r"^/v1/queues/([^/]+)/deliveries/([A-Za-z0-9_-]{1,2048}):(ack|fail|touch)$")
ENQUEUE_TEMPLATE = "/v1/queues/{queue}/jobs"
SETTLE_TEMPLATE = "/v1/queues/{queue}/deliveries/{receipt}:"
_JSON = (b"content-type", b"application/json")
_encoder = msgspec.json.Encoder()


class _TooLarge(HTTPException):
    status_code = 413


class _Gone(Exception):
    """The client disconnected before its body arrived: nobody to answer."""


class FastPaths:
    """ASGI wrapper: answers enqueue, ack, fail and touch itself, passes the rest on."""

    def __init__(self, app: Any, settings: ServeSettings, queues: dict[str, Any],
                 signer: SessionSigner, metrics: HttpMetrics) -> None:
        self.app = app
        self.settings = settings
        self.queues = queues
        self.signer = signer
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer a hot request, or pass it on."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope.get("method") != "POST" or not path.startswith("/v1/queues/"):
            await self.app(scope, receive, send)
            return
        enqueue = _ENQUEUE.match(path)
        settling = None if enqueue else _SETTLE.match(path)
        if enqueue is None and settling is None:
            await self.app(scope, receive, send)
            return
        try:
            if enqueue is not None:
                scope["path_template"] = ENQUEUE_TEMPLATE  # the metrics' route label
                target = self._allowed(scope, enqueue.group(1), "write")
                data = required(decode_bytes(await self._body(scope, receive), EnqueueBody))
                result = await enqueue_job(target, data)
                status, payload = (201 if result.created else 200), _encoder.encode(result)
            else:
                assert settling is not None
                queue, receipt, action = settling.groups()
                scope["path_template"] = SETTLE_TEMPLATE + action
                target = self._allowed(scope, queue, "consume")
                failed: FailBody | AckBody | TouchBody | None = None
                if action == "fail":
                    failed = required(decode_bytes(await self._body(scope, receive), FailBody))
                elif action == "ack":  # an optional {"result": ...} (docs/results.md)
                    failed = decode_bytes(await self._body(scope, receive), AckBody)
                else:  # touch: an optional {"progress": ...}
                    failed = decode_bytes(await self._body(scope, receive), TouchBody)
                status, payload = 200, _encoder.encode(
                    await settle(target, receipt, action, failed))
        except _Gone:
            return
        except Exception as exc:
            status, code, message, field, headers = describe(exc, f"POST {path}")
            extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
            await _answer(send, status, _encoder.encode(
                ErrorBody(ErrorDetail(code, message, field))), extra)
            return
        await _answer(send, status, payload)

    def _allowed(self, scope: Any, queue: str, scope_name: str) -> Any:
        """The served queue, after the principal's scope check (401/403, then 404)."""
        principal, how = resolve(scope, self.settings.tokens, self.signer)
        scope["user"] = principal
        check(principal, how, scope_name)
        return lookup(self.queues, queue)

    async def _body(self, scope: Any, receive: Any) -> bytes:
        """The request body, refused (413) past the limit, announced or streamed."""
        limit = self.settings.max_body_bytes
        for key, value in scope.get("headers", ()):
            if key == b"content-length" and value.isdigit() and int(value) > limit:
                raise _TooLarge()
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Gone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _TooLarge()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


async def _answer(send: Any, status: int, body: bytes,
                  extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        _JSON, (b"content-length", str(len(body)).encode()), *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
