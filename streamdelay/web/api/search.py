"""Search and bulk steering routes of the JSON API (docs/http.md#search-and-bulk): the same
``AsyncQueue.search`` / ``AsyncQueue.bulk`` the CLI and the dashboard drive, one bounded call
per request, resumable by cursor (``client/search_plans.py``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import FromQuery, QueryParameter

from ...base.models import JobInfo
from ...client.search_plans import MAX_SCAN, SCAN, TEXT_MAX
from ..auth import check, needs, principal_of
from .api_models import AtTime, Seconds, Topic, at_of, seconds_of
from .bodies import body, decode
from .common import PREFIX, READ_ERRORS, WRITE_ERRORS, QueueParam, errors, served

READ, WRITE = needs("read"), needs("write")
ScanParam = Annotated[int, QueryParameter(ge=1, le=MAX_SCAN, description=(
    "At most this many jobs examined by this call (the matches may be fewer)."))]
Filter = Annotated[str, msgspec.Meta(max_length=TEXT_MAX)]
State = Literal["delayed", "ready", "reserved", "dead", "waiting"]
StateParam = Annotated[State | None, QueryParameter(name="state", description=(
    "Only jobs in this state (none: every state, delayed first)."))]
BodyParam = Annotated[list[str] | None, QueryParameter(name="body", description=(
    "A body field, `path=value` (`customer.id=42`; numbers and booleans as JSON) or a bare "
    "`path` that must exist; repeat for several, all must hold."))]


class SearchAnswer(msgspec.Struct):
    """The jobs one call matched, in listing order; ``cursor``: pass it to go on (null: the
    search is complete); ``examined``: jobs this call looked at."""

    jobs: list[JobInfo]
    cursor: str | None
    examined: int


class BulkBody(msgspec.Struct, forbid_unknown_fields=True):
    """A bulk action over the jobs a filter matches: one bounded call (``scan`` jobs examined
    after ``cursor``); ``dry_run`` only counts. ``delay`` / ``at``: the new due time of
    ``reschedule`` (neither: now)."""

    action: Literal["cancel", "reschedule", "replay", "purge"]
    topic: Topic | None = None
    state: State | None = None
    error: Filter | None = None
    body: Annotated[list[Filter], msgspec.Meta(max_length=16)] = []
    dry_run: bool = False
    scan: Annotated[int, msgspec.Meta(ge=1, le=MAX_SCAN)] = SCAN
    cursor: Annotated[str, msgspec.Meta(max_length=512)] | None = None
    delay: Seconds | None = None
    at: AtTime | None = None


class BulkAnswer(msgspec.Struct):
    """What one bulk call did: the ids it matched, how many it changed (0 on a dry run), how
    many jobs it examined, and the cursor of the next call (null: done)."""

    action: str
    dry_run: bool
    matched: int
    changed: int
    examined: int
    cursor: str | None
    ids: list[str]


@get(f"{PREFIX}/search", opt=READ, tags=["operators"], operation_id="searchJobs",
     summary="Find jobs by filter", responses=errors(*READ_ERRORS))
async def search_jobs(request: Request[Any, Any, Any], queue: QueueParam,
                      job_state: StateParam = None, topic: FromQuery[str | None] = None,
                      error: FromQuery[str | None] = None, body_field: BodyParam = None,
                      scan: ScanParam = SCAN, cursor: FromQuery[str | None] = None
                      ) -> SearchAnswer:
    """Jobs by topic, state, a piece of their last error (any case) and body fields,
    examining at most ``scan`` jobs per call."""
    page = await served(request, queue).search(topic=topic, state=job_state, error=error,
                                               body=body_field or (), scan=scan, cursor=cursor)
    return SearchAnswer(page.jobs, page.cursor, page.examined)


@post(f"{PREFIX}/jobs/:bulk", opt=WRITE, status_code=200, tags=["operators"],
      operation_id=body("bulkJobs", BulkBody), summary="Act on the jobs a filter matches",
      responses=errors(*WRITE_ERRORS))
async def bulk_jobs(request: Request[Any, Any, Any], queue: QueueParam) -> BulkAnswer:
    """Cancel or reschedule (scope ``write``), replay or purge (scope ``admin``, as their
    single-job routes) the jobs a filter matches, one bounded call; ``dry_run`` counts."""
    data = await decode(request, BulkBody)
    if data.action in ("replay", "purge"):
        check(principal_of(request), str(request.scope.get("auth", "none")), "admin")
    result = await served(request, queue).bulk(
        data.action, topic=data.topic, state=data.state, error=data.error, body=data.body,
        dry_run=data.dry_run, scan=data.scan, cursor=data.cursor,
        delay=seconds_of(data.delay, "delay"), at=at_of(data.at))
    return BulkAnswer(result.action, result.dry_run, result.matched, result.changed,
                      result.examined, result.cursor, result.ids)


ROUTES = [search_jobs, bulk_jobs]
