"""The ``:action`` suffixes of the public paths (``/jobs/{id}:reschedule``, ``/jobs:batch``),
and ``GET /jobs/{id}/result`` (docs/results.md).

Litestar matches whole path segments, and job ids may contain ``:`` and ``/``, so a request's
public path is rewritten before routing to an internal one with the action as its own segment
(``/jobs/:reschedule/{id}``); ``public_path`` maps the internal templates back for the OpenAPI
document and the metrics' route label. Only POST requests carry actions.
"""

from __future__ import annotations

import functools
import re
from typing import Any

_COLLECTION = re.compile(r"^(/v1/queues/[^/]+/(?:jobs|dead)):(batch|bulk|replay|purge|chain)$")
_MEMBER = re.compile(r"^(/v1/queues/[^/]+/(?:jobs|topics|deliveries|workers))/(.+):"
                     r"(reschedule|pause|resume|limit|reserve|ack|fail|touch|quiet|stop)$",
                     re.DOTALL)
# GET .../jobs/{id}/result: a job id may hold "/", so a trailing "/result" is always this
# route's (the job of an id that itself ends in "/result" is not readable by GET .../jobs/{id};
# docs/http.md#results)
_RESULT = re.compile(r"^(/v1/queues/[^/]+/jobs)/(.+)/result$", re.DOTALL)
_INTERNAL_RESULT = re.compile(r"/:result/\{(\w+)(?::\w+)?\}$")
_INTERNAL_MEMBER = re.compile(r"/:(\w+)/\{(\w+)(?::\w+)?\}$")
_INTERNAL_COLLECTION = re.compile(r"/:(\w+)$")


def internal_path(method: str, path: str) -> str:
    """The internal path of a public request path."""
    if method == "GET" and path.endswith("/result"):
        found = _RESULT.match(path)
        return path if found is None else f"{found.group(1)}/:result/{found.group(2)}"
    if method != "POST" or not path.startswith("/v1/"):
        return path
    found = _COLLECTION.match(path)
    if found is not None:
        return f"{found.group(1)}/:{found.group(2)}"
    found = _MEMBER.match(path)
    if found is not None:
        return f"{found.group(1)}/:{found.group(3)}/{found.group(2)}"
    return path


@functools.lru_cache(maxsize=256)
def public_path(template: str) -> str:
    """The public form of an internal route template (``/jobs/:batch`` -> ``/jobs:batch``)."""
    template = _INTERNAL_RESULT.sub(r"/{\1}/result", template)
    template = _INTERNAL_MEMBER.sub(r"/{\2}:\1", template)
    return _INTERNAL_COLLECTION.sub(r":\1", template)


class ActionPaths:
    """ASGI wrapper: rewrites ``scope["path"]`` of action requests before routing."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Rewrite, then pass on."""
        if scope["type"] == "http":
            path = scope.get("path", "")
            rewritten = internal_path(scope.get("method", ""), path)
            if rewritten != path:
                scope["path"] = rewritten
        await self.app(scope, receive, send)

