"""Request limits beyond the body size: the nesting depth of a JSON body.

Litestar refuses a body over ``request_max_body_size`` with 413 itself. A JSON document nested
thousands of levels deep is small but would exhaust the decoder's recursion, so ``body()`` of
``LimitedRequest`` checks the depth first (400 ``too_deep``) with a few C-speed passes: the
strings are cut out, the brackets kept, and innermost pairs are removed level by level.
"""

from __future__ import annotations

import re
from typing import Any

from litestar import Request

from .errors import ApiError

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_INNERMOST = re.compile(rb"\[\]|\{\}")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
DEPTH_STATE_KEY = "streamdelay_max_json_depth"


def json_depth_exceeds(data: bytes, limit: int) -> bool:
    """True when ``data`` (JSON text) nests lists and objects deeper than ``limit``."""
    if data.count(b"[") + data.count(b"{") <= limit:  # cannot be deeper: the common case
        return False
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets, removed = _INNERMOST.subn(b"", brackets)
        if not removed:  # unbalanced: the decoder says what is wrong
            return False
    return bool(brackets)


class LimitedRequest(Request[Any, Any, Any]):
    """A request whose JSON body is refused (400) when nested deeper than the app allows."""

    _depth_checked = False

    async def body(self) -> bytes:
        """The body, checked once for its JSON nesting depth."""
        data = await super().body()
        if not self._depth_checked:
            self._depth_checked = True
            limit = self.app.state.get(DEPTH_STATE_KEY)
            if isinstance(limit, int) and data and json_depth_exceeds(data, limit):
                raise ApiError(400, "too_deep", f"the JSON body is nested deeper than "
                               f"{limit} levels", "body")
        return data
