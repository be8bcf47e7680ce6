"""The dashboard's batch page (docs/workflows.md, docs/dashboard.md#workflows): a batch's
progress (members ended of total, succeeded, dead, pending) and its callbacks with their
states, read through ``AsyncQueue`` like every page, refreshed live. A job's parents and
children are on the job page (``flow_views.py``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from litestar import Response, get

from ...base.errors import StreamdelayError
from ...base.flows import BatchInfo
from ...producer.queue import AsyncQueue
from .flow_views import job_href, progress_text
from .pages import Req, base_context, html, principal, problem, served, status_of
from .render import render
from .views import moment, relative


@dataclass(frozen=True)
class Callback:
    """A batch callback on the batch page."""

    name: str  # on_success, on_complete
    id: str
    state: str
    href: str


async def _callbacks(q: AsyncQueue, queue: str, info: BatchInfo) -> list[Callback]:
    named = [(n, i) for n, i in (("on_success", info.on_success),
                                 ("on_complete", info.on_complete)) if i]
    jobs = await asyncio.gather(*(q.get(i) for _, i in named))
    shown = []
    for (name, cid), job in zip(named, jobs, strict=True):
        if info.state != "done":
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
    callbacks = [] if info is None else await _callbacks(q, queue, info)
    now = (await q.stats()).now
    fields: list[tuple[str, str]] = []
    if info is not None:
        fields = [("state", info.state), ("members", str(info.total)),
                  ("succeeded", str(info.succeeded)), ("dead", str(info.dead)),
                  ("pending", str(info.pending)),
                  ("created", f"{moment(info.created)} ({relative(info.created, now)})")]
    return {"batch_id": batch_id, "info": info, "fields": fields, "callbacks": callbacks,
            "progress": None if info is None else progress_text(info)}


@get("/q/{queue:str}/batch", include_in_schema=False)
async def batch_page(request: Req, queue: str, id: str) -> Response[str]:
    """One batch: members ended of total, succeeded, dead, pending, and its callbacks."""
    principal(request)
    try:
        shown = await _batch(served(request, queue), queue, id)
    except StreamdelayError as exc:
        return problem(request, "Cannot show this batch", str(exc), status_of(exc), queue)
    return html(render("batch.html", **base_context(request, queue), **shown),
                200 if shown["info"] is not None else 404)


@get("/q/{queue:str}/fragment/batch", include_in_schema=False)
async def batch_fragment(request: Req, queue: str, id: str) -> Response[str]:
    """The batch's progress and callbacks alone, for the live refresh."""
    principal(request)
    shown = await _batch(served(request, queue), queue, id)
    return html(render("_batch.html", queue=queue, **shown))
