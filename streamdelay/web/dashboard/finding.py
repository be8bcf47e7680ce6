"""The dashboard's search and bulk steering (docs/dashboard.md#search-and-bulk): the page
``/q/<queue>/find`` drives ``AsyncQueue.search`` (one bounded call per page, "next" goes on by
cursor), and a bulk action over the same filter goes through a confirm step that shows the dry
run's count, then runs in bounded steps; a step that does not finish shows a Continue button
carrying the cursor, so a large bulk action is resumable and no request runs long.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from litestar import Response, get, post
from litestar.exceptions import PermissionDeniedException
from litestar.params import FromPath, FromQuery

from ...base.durations import parse_duration
from ...base.errors import StreamdelayError
from ...base.models import QueueStats
from ...client.listing import STATES, JobPage
from ...client.queue import AsyncQueue
from ...client.search_plans import ACTIONS as BULK_ACTIONS
from . import view_models as views
from .actions import ACTIONS
from .forms import Form
from .pages import Req, base_context, html, principal, problem, see_other, served, status_of
from .render import render

SCAN = 250  # jobs one page of results examines (a page shows at most this many rows)
STEPS = 10  # bulk calls per request (dry run and action), each examining BULK_SCAN jobs
BULK_SCAN = 1000
DONE = {"cancel": "cancelled", "reschedule": "rescheduled", "replay": "replayed",
        "purge": "purged"}


@dataclass(frozen=True)
class Filter:
    """The search form's fields, as the query string carries them."""

    topic: str = ""
    state: str = ""
    error: str = ""
    body: str = ""

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``search`` / ``bulk``."""
        return {"topic": self.topic or None, "state": self.state or None,
                "error": self.error or None,
                "body": [self.body.strip()] if self.body.strip() else []}

    def query(self, **more: str) -> str:
        """The filter (and ``more``) as a query string."""
        fields = {"topic": self.topic, "state": self.state, "error": self.error,
                  "body": self.body, **more}
        return urlencode({k: v for k, v in fields.items() if v})


def _filter(data: Any) -> Filter:
    get_ = data.get
    return Filter(str(get_("topic") or ""), str(get_("state") or ""), str(get_("error") or ""),
                  str(get_("body") or ""))


def _may(request: Req, name: str) -> None:
    who = principal(request)
    if name not in BULK_ACTIONS:
        raise PermissionDeniedException(f"{name!r} is not a bulk action")
    scope = ACTIONS[name].scope
    if not who.allows(scope):
        raise PermissionDeniedException(f"the token {who.name!r} lacks the {scope!r} scope")


def left_to_search(stats: QueueStats, filt: Filter, seen: int) -> int:
    """About how many jobs a search has yet to examine: the counts of its states (of its
    topic) now, less the jobs its pages examined so far (``seen``); jobs that move on
    meanwhile make it an estimate (docs/dashboard.md#search-and-bulk)."""
    states = [filt.state] if filt.state else list(STATES)
    total = sum(views.total_of(stats, state, filt.topic or None) or 0 for state in states)
    return max(total - seen, 0)


@get("/q/{queue:str}/find", include_in_schema=False)
async def find_page(request: Req, queue: FromPath[str], cursor: FromQuery[str] = "",
                    seen: FromQuery[int] = 0) -> Response[str]:
    """The search form and one bounded page of its results (none before a search), with
    about how many jobs are left to search; ``seen``: the jobs earlier pages examined."""
    principal(request)
    q = served(request, queue)
    filt = _filter(request.query_params)
    asked = any(request.query_params.get(k) for k in ("topic", "state", "error", "body",
                                                      "go"))
    page = None
    try:
        stats = await q.stats()
        if asked:
            page = await q.search(scan=SCAN, cursor=cursor or None, **filt.arguments())
    except StreamdelayError as exc:
        return problem(request, "Search", str(exc), status_of(exc), queue,
                       back=f"/q/{quote(queue)}/find")
    rows = views.page_view(JobPage(page.jobs, page.cursor), stats.now) if page is not None else None
    seen = max(seen, 0) + (page.examined if page is not None else 0)
    return html(render("find.html", **base_context(request, queue), f=filt, states=STATES,
                       topics=sorted(stats.topics), rows=rows, page=page, cursor=cursor,
                       actions=_offered(filt), scan=SCAN, seen=seen,
                       left=left_to_search(stats, filt, seen),
                       labels={n: ACTIONS[n].label for n in BULK_ACTIONS}))


def _offered(filt: Filter) -> list[str]:
    """The bulk actions that make sense for the filter's state."""
    if filt.state in ("", "dead"):
        return ["replay", "purge"] + (["cancel", "reschedule"] if filt.state else [])
    if filt.state == "reserved":
        return ["cancel"]
    return ["cancel", "reschedule"]


async def _steps(q: AsyncQueue, name: str, filt: Filter, dry_run: bool, cursor: str | None,
                 delay: float | None) -> tuple[int, int, int, str | None]:
    """Up to STEPS bulk calls from ``cursor``: (matched, changed, examined, cursor left)."""
    matched = changed = examined = 0
    for _ in range(STEPS):
        result = await q.bulk(name, dry_run=dry_run, scan=BULK_SCAN, cursor=cursor, delay=delay,
                              **filt.arguments())
        matched, changed = matched + result.matched, changed + result.changed
        examined += result.examined
        cursor = result.cursor
        if cursor is None:
            break
    return matched, changed, examined, cursor


@get("/q/{queue:str}/bulk", include_in_schema=False)
async def bulk_confirm(request: Req, queue: FromPath[str], action: FromQuery[str],
                       delay: FromQuery[str] = "5m") -> Response[str]:
    """The confirm step of a bulk action: the dry run's count (bounded), and the form that
    starts it. Nothing changes on a GET."""
    q = served(request, queue)
    _may(request, action)
    filt = _filter(request.query_params)
    try:
        seconds = parse_duration(delay, field="delay") if action == "reschedule" else None
        matched, _, examined, left = await _steps(q, action, filt, True, None, seconds)
    except StreamdelayError as exc:
        return problem(request, "Cannot do that", str(exc), status_of(exc), queue,
                       back=f"/q/{quote(queue)}/find?{filt.query()}")
    return html(render("bulk.html", **base_context(request, queue), act=ACTIONS[action], f=filt,
                       matched=matched, examined=examined, more=left is not None,
                       delay=delay, cursor="", changed=None,
                       back=f"/q/{quote(queue)}/find?{filt.query(go='1')}"))


@post("/q/{queue:str}/bulk", include_in_schema=False)
async def bulk_act(request: Req, queue: FromPath[str], data: Form) -> Response[Any]:
    """Run a confirmed bulk action for up to STEPS calls; done: back to the search with what
    happened; not done: a page with a Continue button carrying the cursor."""
    q = served(request, queue)
    name = data.get("action", "")
    _may(request, name)
    filt = _filter(data)
    back = f"/q/{quote(queue)}/find?{filt.query(go='1')}"
    delay = data.get("delay") or "0s"
    done_before = int(data.get("changed") or 0)
    try:
        seconds = parse_duration(delay, field="delay") if name == "reschedule" else None
        matched, changed, examined, left = await _steps(q, name, filt, False,
                                                        data.get("cursor") or None, seconds)
    except StreamdelayError as exc:
        return problem(request, "That did not work", str(exc), status_of(exc), queue,
                       back=back)
    total = done_before + changed
    said = f"{total} job{'s' if total != 1 else ''} {DONE[name]}"
    if left is None:
        return see_other(f"{back}&{urlencode({'done': said})}")
    return html(render("bulk.html", **base_context(request, queue), act=ACTIONS[name], f=filt,
                       matched=matched, examined=examined, more=True, delay=delay,
                       cursor=left, changed=total, back=back))
