"""What every route of the JSON API shares: the served-queue lookup and the documented errors."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Annotated, Any

from litestar import Request
from litestar.openapi import ResponseSpec
from litestar.params import PathParameter, QueryParameter

from ...base import validation
from ...client.queue import AsyncQueue
from ..http_errors import ApiError, ErrorBody

PREFIX = "/v1/queues/{queue:str}"
# every parameter says where it comes from (Litestar's explicit style: the inferred one is
# deprecated: docs/design.md, Web)
QueueParam = Annotated[str, PathParameter()]
TopicParam = Annotated[str, PathParameter(pattern=validation.TOPIC.pattern,
                                          description="The topic.")]
TopicQuery = Annotated[str | None, QueryParameter(pattern=validation.TOPIC.pattern,
                                                  description="The topic.")]
# The characters of both id forms (a {name:path} value starts with "/": path_value strips it);
# the exact form, {key}rest or plain, is the library's check (422 naming id): a pattern with the
# optional {key} group kept schemathesis from generating the reschedule route's examples.
JobIdParam = Annotated[str, PathParameter(
    pattern=r"^/?[A-Za-z0-9_.:@/+={}-]{1,195}$", description=(
    "The job id (a \"/\" in it may be sent as is or as %2F; a keyed job's id, {key}rest, "
    "with its braces as %7B and %7D)."))]
ReceiptParam = Annotated[str, PathParameter(pattern=r"^[A-Za-z0-9_-]{1,2048}$", description=(
    "The receipt of a delivery, as reserve returned it."))]
_WHY = {
    400: "The request is malformed: not JSON, a wrong type, an unknown field, a query "
         "parameter out of range, or JSON nested too deep.",
    401: "No valid bearer token.",
    403: "The token lacks the scope this route needs.",
    404: "The queue is not served here, or the job (group, queue) does not exist.",
    405: "The path exists but not with this method.",
    408: "The request's headers or body did not arrive in time; the connection is closed.",
    409: "The receipt's delivery was reclaimed, cancelled, replaced or already settled.",
    413: "The request body is larger than the service accepts.",
    422: "A value the library refuses (the field is named).",
    431: "The request line and headers are larger than the service accepts; the connection "
         "is closed.",
    500: "A fault of the service itself (logged there with its traceback, never sent).",
    503: "Redis is unreachable or refused the operation; retrying is safe.",
}
# any operation may answer these: 408 and 431 come from the HTTP layer before the route
# (docs/security.md#limits-of-serve)
ALWAYS = (405, 408, 431, 500)
READ_ERRORS = (400, 401, 403, 404, 422, 503)
WRITE_ERRORS = (400, 401, 403, 404, 413, 422, 503)


def errors(*codes: int) -> dict[int, ResponseSpec]:
    """The documented error answers of a route (``ALWAYS`` included)."""
    return {code: ResponseSpec(data_container=ErrorBody, description=_WHY[code],
                               generate_examples=False) for code in (*codes, *ALWAYS)}


def served(request: Request[Any, Any, Any], queue: str) -> AsyncQueue:
    """The served queue named ``queue``; 404 for any other."""
    return lookup(request.app.state.queues, queue)


def lookup(queues: dict[str, AsyncQueue], queue: str) -> AsyncQueue:
    """The queue named ``queue`` of ``queues``; 404 for any other."""
    found = queues.get(queue)
    if found is None:
        raise ApiError(404, "no_such_queue", f"queue: {queue[:80]!r} is not served here",
                       "queue")
    return found


def path_value(value: Any) -> str:
    """A ``{name:path}`` parameter as the text it was (job ids may contain ``/``)."""
    if isinstance(value, PurePosixPath):
        return str(value).lstrip("/")
    return str(value).lstrip("/")
