"""Request limits beyond the body size: the nesting depth of a JSON body.

Litestar refuses a body over ``request_max_body_size`` with 413 itself. A JSON document nested
thousands of levels deep is small but exhausts a decoder's recursion: msgspec then raises
``RecursionError`` (safely, through Python's recursion guard, near 1,000 levels), which the
routes' ``bodies.decode`` and ``LimitedRequest.json`` answer with 400 ``too_deep``. Below that,
a request's own structure is a few fixed levels and a job body is held to the queue's limit of
128 levels by the library (422, field ``body``). No pre-scan of the bytes is needed, so large
batches pay nothing for the check.
"""

from __future__ import annotations

from typing import Any

from litestar import Request

from .http_errors import ApiError


def too_deep() -> ApiError:
    """The answer to a JSON body nested deeper than the decoder's recursion allows."""
    return ApiError(400, "too_deep", "the JSON body is nested too deep", "body")


class LimitedRequest(Request[Any, Any, Any]):
    """A request whose ``json()`` answers a too-deep body with 400 instead of an error 500."""

    async def json(self) -> Any:
        """The decoded JSON body."""
        try:
            return await super().json()
        except RecursionError:
            raise too_deep() from None
