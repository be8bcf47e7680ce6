"""The dashboard's pages and fragments (docs/dashboard.md): each handler reads the queue through
``AsyncQueue`` (the same plans as the CLI and the JSON API), turns the answer into a view model
(``view_models.py``) and renders a template (``render.py``).

Pages need the ``read`` scope; a page asked for without a session goes to ``/login``, a
fragment (the live refresh) answers 401 and the script goes to ``/login`` itself.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from litestar import MediaType, Request, Response, get
from litestar.exceptions import NotAuthorizedException, NotFoundException
from litestar.params import FromPath, FromQuery
from litestar.status_codes import HTTP_303_SEE_OTHER
from litestar.utils.scope.state import ScopeState

from ...base.errors import NoSuchQueue, StreamdelayError, ValidationError
from ...base.fleet import DeadRetention
from ...base.models import QueueStats
from ...client.listing import STATES
from ...client.queue import AsyncQueue
from ...io.runner import drive_async
from ...protocol.partitions import retention_plan
from ...telemetry.lateness import LatenessWindow, lateness_plan
from ..auth import principal_of
from ..tokens import Principal
from . import job_outcomes as outcomes
from . import view_models as views
from .actions import ACTIONS
from .flow_views import relations
from .live_events import events_context
from .render import render
from .totals import totals_context, window_of

PAGE_SIZE = 50  # rows of a job list page
LABELS = {name: act.label for name, act in ACTIONS.items()}
Req = Request[Any, Any, Any]


def html(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Response[str]:
    """An HTML answer that no cache keeps (pages show live state)."""
    return Response(body, status_code=status, media_type=MediaType.HTML,
                    headers={"Cache-Control": "no-store", **(headers or {})})


# control characters (C0, DEL, C1), any whitespace (Unicode too) and the backslash
_UNSAFE_IN_PATH = re.compile(r"[\x00-\x20\x7f-\x9f\\\s]")
_PRINTABLE_ASCII = "".join(chr(c) for c in range(0x21, 0x7F))


def see_other(location: str) -> Response[Any]:
    """A 303 to a path of this site."""
    return Response(b"", status_code=HTTP_303_SEE_OTHER, headers={"Location": location})


def local_path(value: str | None, default: str = "/") -> str:
    """``value`` when it is a path of this site (``/x``), else ``default``: where a login or
    an action may send the browser back to. Refused (docs/security.md#redirects): anything not
    starting with one ``/``, and any control character, whitespace, backslash or ``//``
    anywhere (browsers drop a tab or new line and read ``\\`` as ``/``, so ``/\\t/host``
    would leave the site; a CR or LF would split the header). Other non-ASCII characters are
    percent-encoded (a header is Latin-1)."""
    if (not value or not value.startswith("/") or "//" in value
            or _UNSAFE_IN_PATH.search(value)):
        return default
    return quote(value, safe=_PRINTABLE_ASCII)


def principal(request: Req) -> Principal:
    """The request's principal, or NotAuthorizedException (a page then goes to ``/login``)."""
    found = principal_of(request)
    if found is None:
        raise NotAuthorizedException("log in first")
    if not found.allows("read"):
        raise NotAuthorizedException(f"the token {found.name!r} lacks the 'read' scope")
    return found


def csrf_token(request: Req) -> str:
    """The CSRF token the forms of this page carry (set by Litestar's CSRF middleware on safe
    requests; '' on a POST, whose answer is a redirect or an error page)."""
    token = ScopeState.from_scope(request.scope).csrf_token
    return token if isinstance(token, str) else ""


def allowed(request: Req) -> frozenset[str]:
    """The actions the request's principal may do: the pages offer only these."""
    who = principal_of(request)
    if who is None:
        return frozenset()
    return frozenset(name for name, act in ACTIONS.items() if who.allows(act.scope))


def base_context(request: Req, queue: str | None = None) -> dict[str, Any]:
    """What every page's frame shows: the queues, who is logged in, the CSRF token."""
    who = principal_of(request)
    shown = list(request.app.state.queues) if who is not None else []  # none before login
    return {"queues": shown, "queue": queue,
            "user": who.name if who is not None and request.scope.get("auth") == "session"
            else None,
            "csrf_token": csrf_token(request),
            "done": request.query_params.get("done"), "can": allowed(request)}


def served(request: Req, name: str) -> AsyncQueue:
    """The served queue ``name``; 404 for any other."""
    found: AsyncQueue | None = request.app.state.queues.get(name)
    if found is None:
        raise NotFoundException(f"queue {name!r} is not served here")
    return found


@dataclass(frozen=True)
class TopicsData:
    """What the topic table needs: counts and the lateness window."""

    stats: QueueStats
    window: LatenessWindow | None


async def read_topics(q: AsyncQueue) -> TopicsData:
    """Stats and the last minutes of lateness, read together (two round trips in parallel);
    the table still shows the counts when the lateness read fails."""
    window_plan = lateness_plan(q.name, views.LATENESS_MINUTES)
    stats, window = await asyncio.gather(
        q.stats(), drive_async(q.client, window_plan, q.config.retry_for),
        return_exceptions=True)
    if isinstance(stats, BaseException):
        raise stats
    return TopicsData(stats, None if isinstance(window, BaseException) else window)


def topics_context(queue: str, data: TopicsData, detail: bool = False) -> dict[str, Any]:
    """The template names of ``_topics.html``; ``detail``: with the queue page's charts."""
    rows = views.topic_rows(data.stats, data.window, detail=detail)
    return {"queue": queue, "rows": rows, "total": views.totals(rows),
            "now": views.moment(data.stats.now), "limited": any(r.limit for r in rows),
            "detail": detail}


def status_of(exc: StreamdelayError) -> int:
    """The status of a page that failed with ``exc``: 404 no such queue, 400 bad input, 503
    for the rest (Redis away, refused, ...)."""
    if isinstance(exc, NoSuchQueue):
        return 404
    return 400 if isinstance(exc, ValidationError) else 503


def problem(request: Req, heading: str, message: str, status: int, queue: str | None = None,
            back: str = "/") -> Response[str]:
    """A page that says what went wrong (never a traceback)."""
    return html(render("notice.html", **base_context(request, queue), heading=heading,
                       message=message, css="error", back=back), status)


@get("/", include_in_schema=False)
async def overview(request: Req) -> Response[str]:
    """Every served queue with its topic table (live)."""
    principal(request)
    queues: dict[str, AsyncQueue] = request.app.state.queues
    found = await asyncio.gather(*(read_topics(q) for q in queues.values()),
                                 return_exceptions=True)
    cards: list[dict[str, Any]] = []
    for name, data in zip(queues, found, strict=True):
        if isinstance(data, NoSuchQueue):
            cards.append({"queue": name, "error": "No such queue yet: nothing was enqueued."})
        elif isinstance(data, StreamdelayError):
            cards.append({"queue": name, "error": str(data)})
        elif isinstance(data, BaseException):
            raise data
        else:
            cards.append({"error": None, **topics_context(name, data)})
    return html(render("overview.html", **base_context(request), cards=cards))


@get("/q/{queue:str}", include_in_schema=False)
async def queue_page(request: Req, queue: FromPath[str], window: FromQuery[str] = ""
                     ) -> Response[str]:
    """One queue: its totals and throughput over ``window`` (docs/dashboard.md#totals), its
    topic table with lateness charts (live) and the job lists."""
    principal(request)
    q = served(request, queue)
    found, listed, events, summary = await asyncio.gather(
        read_topics(q), q.schedules(), events_context(q),
        totals_context(q, window_of(window)), return_exceptions=True)
    if isinstance(summary, BaseException):
        raise summary  # totals_context answers Redis trouble itself
    if isinstance(found, StreamdelayError):
        return problem(request, f"Queue {queue}", str(found), status_of(found), queue)
    if isinstance(found, BaseException):
        raise found
    if isinstance(listed, BaseException) and not isinstance(listed, StreamdelayError):
        raise listed
    if isinstance(events, BaseException):
        if not isinstance(events, StreamdelayError):
            raise events
        events = {"events_on": True, "events": []}  # the panel's refresh tries again
    schedules = (None if isinstance(listed, BaseException)
                 else views.schedule_rows(listed, found.stats.now))
    return html(render("queue.html", **{**base_context(request, queue),
                                        **topics_context(queue, found, detail=True)},
                       schedules=schedules, **events, **summary,
                       schedules_error=str(listed) if isinstance(listed, BaseException) else ""))


@get("/q/{queue:str}/fragment/events", include_in_schema=False)
async def events_fragment(request: Req, queue: FromPath[str]) -> Response[str]:
    """The queue page's live events panel alone, for the live refresh."""
    principal(request)
    return html(render("_events.html", queue=queue,
                       **await events_context(served(request, queue))))


@get("/q/{queue:str}/fragment/topics", include_in_schema=False)
async def topics_fragment(request: Req, queue: FromPath[str], detail: FromQuery[str] = ""
                          ) -> Response[str]:
    """The topic table alone (``detail=1``: with the queue page's charts), for the live
    refresh."""
    principal(request)
    q = served(request, queue)
    data = await read_topics(q)
    return html(render("_topics.html", **topics_context(queue, data, detail=bool(detail)),
                       can=allowed(request)))


@get("/q/{queue:str}/fragment/totals", include_in_schema=False)
async def totals_fragment(request: Req, queue: FromPath[str], window: FromQuery[str] = ""
                          ) -> Response[str]:
    """The queue page's totals card alone (docs/dashboard.md#totals), for the live refresh."""
    principal(request)
    summary = await totals_context(served(request, queue), window_of(window))
    return html(render("_totals.html", queue=queue, **summary))


@get("/q/{queue:str}/jobs", include_in_schema=False)
async def jobs_page(request: Req, queue: FromPath[str], topic: FromQuery[str] = "",
                    cursor: FromQuery[str | None] = None) -> Response[str]:
    """A page of jobs in one state (``?state=``: delayed by due time, the others in stream
    order); ``state`` is read from the query directly, Litestar reserves the name."""
    principal(request)
    listed = str(request.query_params.get("state") or "delayed")
    q = served(request, queue)
    try:
        page, stats, retention = await asyncio.gather(
            q.jobs(listed, topic=topic or None, limit=PAGE_SIZE, cursor=cursor or None),
            q.stats(), drive_async(q.client, retention_plan(queue), q.config.retry_for))
    except StreamdelayError as exc:
        return problem(request, "Cannot list these jobs", str(exc), status_of(exc), queue,
                       back=f"/q/{quote(queue)}")
    return html(render("jobs.html", **base_context(request, queue), state=listed, topic=topic,
                       cursor=cursor, states=STATES, topics=sorted(stats.topics),
                       retention=retention_text(*retention),
                       page=views.page_view(page, stats.now, views.total_of(
                           stats, listed, topic or None))))


def retention_text(ttl_ms: int | None, most: int | None) -> str:
    """The dead list's line on the retention in force (docs/dashboard.md)."""
    return DeadRetention(None if ttl_ms is None else ttl_ms / 1000, most).text()


async def _job(q: AsyncQueue, job_id: str, queue: str) -> dict[str, Any]:
    """What the job page shows of ``job_id`` (``job`` None when the queue knows nothing of
    it): its record, its workflow (its parents and the jobs and batches waiting for it, with
    their states: docs/workflows.md), how it ended (its kept result, finish time) and its
    event timeline (``job_outcomes.py``). A job known only by its kept result has a page too."""
    info, stats = await asyncio.gather(q.get(job_id), q.stats())
    result = await outcomes.read_result(q, job_id, info)
    if info is not None:
        served_by = stats.topics.get(info.topic)
        job = views.job_view(info, stats.now, served_by.group if served_by else None)
        timeline, rels = await asyncio.gather(
            outcomes.read_timeline(q, job_id, info, result), relations(q, queue, info))
    elif result is not None:  # ended, its record gone: its kept result (docs/results.md)
        job, rels = outcomes.result_view(result), []
        timeline = await outcomes.read_timeline(q, job_id, None, result)
    else:
        return {"job": None, "relations": [], "outcome": None, "timeline": None}
    return {"job": job, "relations": rels, "timeline": timeline,
            "outcome": outcomes.outcome(info, result, timeline, stats.now)}


@get("/q/{queue:str}/job", include_in_schema=False)
async def job_page(request: Req, queue: FromPath[str], id: FromQuery[str]) -> Response[str]:
    """One job: record, attempts, last error, due, consumer, body, headers and its actions;
    once it ended, its result and finish time; its event timeline when events are on."""
    principal(request)
    q = served(request, queue)
    try:
        shown = await _job(q, id, queue)
    except StreamdelayError as exc:
        return problem(request, "Cannot show this job", str(exc), status_of(exc), queue)
    return html(render("job.html", **base_context(request, queue), job_id=id, labels=LABELS,
                       **shown), 200 if shown["job"] is not None else 404)


@get("/q/{queue:str}/fragment/job", include_in_schema=False)
async def job_fragment(request: Req, queue: FromPath[str], id: FromQuery[str]
                       ) -> Response[str]:
    """The job's record, result, timeline and actions alone, for the live refresh."""
    principal(request)
    shown = await _job(served(request, queue), id, queue)
    if shown["job"] is None:
        return html(render("_job_gone.html", job_id=id))
    return html(render("_job.html", queue=queue, labels=LABELS, can=allowed(request),
                       **shown))


@get("/search", include_in_schema=False)
async def search(request: Req, queue: FromQuery[str], id: FromQuery[str]) -> Response[Any]:
    """Find a job by id: its page when it exists, else a page that says so."""
    principal(request)
    q = served(request, queue)
    job_id = id.strip()
    try:
        info = await q.get(job_id)
    except StreamdelayError as exc:
        return problem(request, "Search", str(exc), status_of(exc), queue)
    if info is None and await q.batch_info(job_id) is not None:  # docs/workflows.md
        return see_other(f"/q/{quote(queue)}/batch?{urlencode({'id': job_id})}")
    if info is None and await outcomes.read_result(q, job_id, None) is None:
        return problem(request, "Search", f"There is no job {job_id!r} in queue {queue}.", 404,
                       queue, back=f"/q/{quote(queue)}")
    return see_other(f"/q/{quote(queue)}/job?{urlencode({'id': job_id})}")
