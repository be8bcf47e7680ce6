"""The dashboard's batch page (docs/workflows.md, docs/dashboard.md#workflows): a batch's
progress (members ended of total, succeeded, dead, pending), its members with what each did
(the ones that did not succeed first) and its callbacks with their states, read through
``AsyncQueue`` like every page, refreshed live. A job's parents and children are on the job
page (``flow_views.py``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from litestar import Response, get
from litestar.params import FromPath, FromQuery

from ...base.errors import StreamdelayError
from ...base.flows import BatchInfo
from ...base.models import JobInfo
from ...client.flow_plans import PARENT_STATES, batch_home
from ...client.queue import AsyncQueue
from ...io.runner import drive_async
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Command, Commands, Plan
from ...protocol.replies import text
from .flow_views import job_href, progress_text
from .pages import Req, base_context, html, principal, problem, served, status_of
from .render import render
from .view_models import moment, relative

MEMBERS_READ = 2000  # members of a batch one refresh reads (HSCAN of PREFIX bm:<id>), at most
MEMBERS_SHOWN = 100  # members listed: those that did not succeed first
PENDING_READ = 20  # pending members listed whose state now the page reads (a get each)
_ORDER = {"dead": 0, "cancelled": 1, "pending": 2, "succeeded": 3}


@dataclass(frozen=True)
class Member:
    """A batch member on the batch page: what it did for the batch (``dead``, ``cancelled``,
    ``succeeded``, ``pending``), and for a pending one its state now (``pending
    (delayed)``)."""

    id: str
    state: str
    href: str


def _pairs(found: Any) -> list[tuple[Any, Any]]:
    if isinstance(found, dict):
        return list(found.items())
    return list(zip(found[::2], found[1::2], strict=True))


def members_plan(q: AsyncQueue, batch_id: str) -> Plan[tuple[int, list[tuple[str, str]]]]:
    """(members in all, up to ``MEMBERS_READ`` of them as (id, outcome)): ``HLEN`` and
    ``HSCAN`` of the batch's member hash (docs/keys.md#keys: ``PREFIX bm:<id>``, in the
    batch's partition), bounded, read only."""
    key = PartitionKeys(q.name, batch_home(batch_id, q.config.partitions)).prefix + "bm:" + batch_id
    total, reply = yield Commands((Command(("HLEN", key)),
                                   Command(("HSCAN", key, "0", "COUNT", 500))))
    found: list[tuple[str, str]] = []
    while True:
        found += [(text(k), PARENT_STATES.get(text(v), "pending")) for k, v in _pairs(reply[1])]
        cursor = text(reply[0])
        if cursor == "0" or len(found) >= MEMBERS_READ:
            return int(total), found
        reply = yield Command(("HSCAN", key, cursor, "COUNT", 500))


async def _members(q: AsyncQueue, queue: str, batch_id: str
                   ) -> tuple[int, int, list[Member]]:
    """(members in all, members read, those the page lists: the ones that did not succeed
    first, then by id), the first ``PENDING_READ`` pending ones with their state now (one
    ``get`` each)."""
    total, found = await drive_async(q.client, members_plan(q, batch_id), q.config.retry_for)
    found.sort(key=lambda m: (_ORDER.get(m[1], 2), m[0]))
    shown = found[:MEMBERS_SHOWN]
    pending = [mid for mid, state in shown if state == "pending"][:PENDING_READ]
    now = await asyncio.gather(*(q.get(mid) for mid in pending), return_exceptions=True)
    states = {mid: (f"pending ({info.state})" if isinstance(info, JobInfo) else "pending")
              for mid, info in zip(pending, now, strict=True)}
    return total, len(found), [Member(mid, states.get(mid, state), job_href(queue, mid))
                               for mid, state in shown]


@dataclass(frozen=True)
class Callback:
    """A batch callback on the batch page."""

    name: str  # on_success, on_complete
    id: str
    state: str
    href: str


async def _callbacks(q: AsyncQueue, queue: str, info: BatchInfo, members: list[Member]
                     ) -> list[Callback]:
    named = [(n, i) for n, i in (("on_success", info.on_success),
                                 ("on_complete", info.on_complete)) if i]
    jobs = await asyncio.gather(*(q.get(i) for _, i in named))
    failed = [m.id for m in members if m.state in ("dead", "cancelled")]
    shown = []
    for (name, cid), job in zip(named, jobs, strict=True):
        if info.state != "done" and name == "on_success" and info.dead:
            # a member that did not succeed: on_success can no longer fire (docs/workflows.md)
            which = f" ({', '.join(failed[:5])}{', ...' if len(failed) > 5 else ''})" \
                if failed else ""
            state = f"will not be enqueued: {info.dead} member(s) did not succeed{which}"
        elif info.state != "done":
            state = "enqueued once the batch is closed and every member ended"
        elif job is not None:
            state = job.state
        elif name == "on_success" and info.dead:
            state = f"not enqueued: {info.dead} member(s) did not succeed"
        else:
            state = "ran (acknowledged) or cancelled"
        shown.append(Callback(name, cid, state, job_href(queue, cid)))
    return shown


async def _batch(q: AsyncQueue, queue: str, batch_id: str) -> dict[str, Any]:
    """What ``_batch.html`` shows of ``batch_id`` (``info`` None: no such batch)."""
    info = await q.batch_info(batch_id)
    total, read, members = (0, 0, []) if info is None else await _members(q, queue, batch_id)
    callbacks = [] if info is None else await _callbacks(q, queue, info, members)
    now = (await q.stats()).now
    fields: list[tuple[str, str]] = []
    if info is not None:
        fields = [("state", info.state), ("members", str(info.total)),
                  ("succeeded", str(info.succeeded)), ("dead", str(info.dead)),
                  ("pending", str(info.pending)),
                  ("created", f"{moment(info.created)} ({relative(info.created, now)})")]
    return {"batch_id": batch_id, "info": info, "fields": fields, "callbacks": callbacks,
            "members": members, "members_total": total, "members_read": read,
            "progress": None if info is None else progress_text(info)}


@get("/q/{queue:str}/batch", include_in_schema=False)
async def batch_page(request: Req, queue: FromPath[str], id: FromQuery[str]) -> Response[str]:
    """One batch: members ended of total, succeeded, dead, pending, its members and its
    callbacks."""
    principal(request)
    try:
        shown = await _batch(served(request, queue), queue, id)
    except StreamdelayError as exc:
        return problem(request, "Cannot show this batch", str(exc), status_of(exc), queue)
    return html(render("batch.html", **base_context(request, queue), **shown),
                200 if shown["info"] is not None else 404)


@get("/q/{queue:str}/fragment/batch", include_in_schema=False)
async def batch_fragment(request: Req, queue: FromPath[str], id: FromQuery[str]
                         ) -> Response[str]:
    """The batch's progress and callbacks alone, for the live refresh."""
    principal(request)
    shown = await _batch(served(request, queue), queue, id)
    return html(render("_batch.html", queue=queue, **shown))
