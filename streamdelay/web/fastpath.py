"""The one-job enqueue, ``POST /v1/queues/{queue}/jobs``, answered before Litestar routes it.

It is the request producers send most, and Litestar's per-request work (routing, signature
parsing, the response objects) cost about a third of its server CPU in a py-spy profile. This
ASGI wrapper answers it with the same parts the Litestar route uses: the same principal and
scope check (``auth.resolve``, ``auth.check``), body limit, strict decoding
(``bodies.decode_bytes``), queue lookup, library call (``jobs.enqueue_job``) and error
description (``errors.describe``), so the two cannot answer differently; the route stays
registered for the OpenAPI document (docs/design.md#web). Any other request passes through.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from litestar.exceptions import HTTPException

from .api.bodies import decode_bytes, required
from .api.common import lookup
from .api.jobs import enqueue_job
from .api.models import EnqueueBody
from .auth import SessionSigner, check, resolve
from .errors import ErrorBody, ErrorDetail, describe
from .settings import ServeSettings

_ENQUEUE = re.compile(r"^/v1/queues/([^/]+)/jobs$")
TEMPLATE = "/v1/queues/{queue}/jobs"
_JSON = (b"content-type", b"application/json")
_encoder = msgspec.json.Encoder()


class _TooLarge(HTTPException):
    status_code = 413


class _Gone(Exception):
    """The client disconnected before its body arrived: nobody to answer."""


class FastEnqueue:
    """ASGI wrapper: answers one-job enqueues itself, passes everything else on."""

    def __init__(self, app: Any, settings: ServeSettings, queues: dict[str, Any],
                 signer: SessionSigner) -> None:
        self.app = app
        self.settings = settings
        self.queues = queues
        self.signer = signer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer an enqueue, or pass the request on."""
        found = (_ENQUEUE.match(scope.get("path", ""))
                 if scope["type"] == "http" and scope.get("method") == "POST" else None)
        if found is None:
            await self.app(scope, receive, send)
            return
        scope["path_template"] = TEMPLATE  # the metrics' route label
        try:
            principal, how = resolve(scope, self.settings.tokens, self.signer)
            scope["user"] = principal
            check(principal, how, "write")
            target = lookup(self.queues, found.group(1))
            data = required(decode_bytes(await self._body(scope, receive), EnqueueBody))
            result = await enqueue_job(target, data)
        except _Gone:
            return
        except Exception as exc:
            status, code, message, field, headers = describe(exc, f"POST {scope['path']}")
            extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
            await _answer(send, status, _encoder.encode(
                ErrorBody(ErrorDetail(code, message, field))), extra)
            return
        await _answer(send, 201 if result.created else 200, _encoder.encode(result))

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
