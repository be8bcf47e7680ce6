"""``GET /v1/queues/{queue}/events``: the queue's lifecycle events as Server-Sent Events
(docs/http.md#events). Each event's SSE ``id`` is its cursor, so a client that reconnects with
``Last-Event-ID`` resumes right after the last event it got; ``event`` is the kind and ``data``
the event as JSON. It drives ``AsyncQueue.events``, the reader every other face uses."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

import msgspec
from litestar import Request, get
from litestar.openapi import ResponseSpec
from litestar.params import QueryParameter
from litestar.response import ServerSentEvent, ServerSentEventMessage

from ...base.events import JobEvent
from ...protocol.event_entries import since_problem
from ..auth import needs
from ..http_errors import ApiError
from .common import PREFIX, READ_ERRORS, QueueParam, TopicQuery, errors, served

RETRY_MS = 1000  # what an EventSource waits before it reconnects (its ``retry`` field)
KEEPALIVE = "keepalive"  # the comment an idle follow sends (``--sse-keepalive``)
SinceParam = Annotated[str | None, QueryParameter(
    pattern=r"^[0-9,.\-]{1,4096}$", description=(
        "Events at or after this epoch ms, or after this cursor (an event's SSE id). The "
        "Last-Event-ID header, when sent, takes its place. Absent: every event kept."))]
FollowParam = Annotated[bool, QueryParameter(description=(
    "Keep the answer open and send new events as they come (false: end after the newest "
    "kept)."))]


class EventData(msgspec.Struct):
    """The ``data`` of one SSE event: a lifecycle event (``sd.JobEvent``)."""

    kind: str
    id: str
    topic: str
    attempt: int
    at: int
    detail: str
    cursor: str


def _message(event: JobEvent) -> ServerSentEventMessage:
    data = EventData(event.kind, event.id, event.topic, event.attempt, event.at, event.detail,
                     event.cursor)
    return ServerSentEventMessage(data=msgspec.json.encode(data).decode(), event=event.kind,
                                  id=event.cursor)


async def _stream(events: AsyncIterator[JobEvent], keepalive: float
                  ) -> AsyncIterator[ServerSentEventMessage]:
    """The retry line, then each event, and a ``: keepalive`` comment whenever ``keepalive``
    seconds pass without one: a proxy closes a connection that stays silent (docs/http.md
    #events). The next event is awaited across the comments, never cancelled in between."""
    yield ServerSentEventMessage(data=None, retry=RETRY_MS, comment="streamdelay events")
    iterator = aiter(events)
    pending: asyncio.Future[JobEvent] = asyncio.ensure_future(anext(iterator))
    try:
        while True:
            done, _ = await asyncio.wait((pending,), timeout=keepalive)
            if not done:
                yield ServerSentEventMessage(comment=KEEPALIVE)
                continue
            try:
                event = pending.result()
            except StopAsyncIteration:
                return
            yield _message(event)
            pending = asyncio.ensure_future(anext(iterator))
    finally:  # the client left (or the events ended): stop the read, close the reader
        pending.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pending
        closing = getattr(iterator, "aclose", None)
        if closing is not None:
            await closing()


def _resume(request: Request[Any, Any, Any], since: str | None) -> str | None:
    """Where to resume: ``Last-Event-ID`` when sent, else ``since``; 400 naming the one that
    is no position at all (a cursor of another partition count is the library's 422)."""
    header = request.headers.get("last-event-id")
    value, field = (header, "Last-Event-ID") if header else (since, "since")
    if value is not None and (problem := since_problem(value)) is not None:
        raise ApiError(400, "bad_request", f"{field}: {value[:80]!r} is {problem}", field)
    return value


@get(f"{PREFIX}/events", opt=needs("read"), tags=["operators"], operation_id="events",
     summary="Follow the lifecycle events (Server-Sent Events)",
     responses={200: ResponseSpec(str, media_type="text/event-stream",
                                  generate_examples=False, description=(
                                      "A `text/event-stream`: one event per lifecycle event, "
                                      "its `id` the cursor, its `event` the kind, its `data` "
                                      "a JSON object with `kind`, `id`, `topic`, `attempt`, "
                                      "`at` (epoch ms), `detail` and `cursor`.")),
                **errors(*READ_ERRORS)})
async def events(request: Request[Any, Any, Any], queue: QueueParam,
                 topic: TopicQuery = None,
                 since: SinceParam = None, follow: FollowParam = True) -> ServerSentEvent:
    """The queue's events, oldest kept first, then (`follow`) new ones as they come; resume
    with `Last-Event-ID`. Empty unless the queue keeps events."""
    resume = _resume(request, since)
    keepalive: float = request.app.state.settings.sse_keepalive
    return ServerSentEvent(_stream(served(request, queue).events(topic, resume, follow=follow),
                                   keepalive))


ROUTES = [events]
