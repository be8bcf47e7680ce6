"""The dashboard's Workers page and a worker's page (docs/dashboard.md#workers): the live
consumers of a queue as ``AsyncQueue.workers`` reads them from the fleet record, what each runs
now and for how long, each job linked to its page (and a running job's page links back here)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from litestar import Request, Response, get
from litestar.params import FromPath, FromQuery

from ...base.errors import StreamdelayError
from ...base.fleet import WorkerInfo
from .pages import base_context, html, principal, problem, served, status_of
from .render import render
from .view_models import duration, moment

Req = Request[Any, Any, Any]


@dataclass(frozen=True)
class RunningView:
    """A job a worker runs: its id, its page and for how long it has run."""

    id: str
    href: str
    running_for: str


@dataclass(frozen=True)
class WorkerView:
    """One worker as the pages show it."""

    name: str
    href: str
    kind: str
    state: str
    host: str
    pid: int
    version: str
    group: str
    topics: str
    jobs: str
    up: str
    started: str
    seen: str
    running: list[RunningView]
    more: int


def worker_view(queue: str, info: WorkerInfo, now: float) -> WorkerView:
    """The view of ``info`` at ``now`` (epoch seconds)."""
    running = [RunningView(job_id, f"/q/{quote(queue)}/job?{urlencode({'id': job_id})}",
                           duration(max(0.0, now - since) * 1000))
               for job_id, since in zip(info.running, info.running_since, strict=False)]
    return WorkerView(
        info.name, f"/q/{quote(queue)}/worker?{urlencode({'name': info.name})}", info.kind,
        info.state, info.host, info.pid, info.version, info.group, ", ".join(info.topics),
        f"{info.running_count} of {info.concurrency}" if info.kind == "worker"
        else str(info.running_count),
        duration(max(0.0, now - info.started) * 1000) if info.kind == "worker" else "",
        moment(int(info.started * 1000)), duration(max(0.0, now - info.last_seen) * 1000),
        running, max(0, info.running_count - len(running)))


@get("/q/{queue:str}/workers", include_in_schema=False)
async def workers_page(request: Req, queue: FromPath[str]) -> Response[str]:
    """Every live worker of the queue: state, group, topics, jobs, uptime, and what it runs."""
    principal(request)
    try:
        found = await served(request, queue).workers()
    except StreamdelayError as exc:
        return problem(request, "Workers", str(exc), status_of(exc), queue)
    now = time.time()
    return html(render("workers.html", **base_context(request, queue), page="workers",
                       workers=[worker_view(queue, w, now) for w in found]))


@get("/q/{queue:str}/worker", include_in_schema=False)
async def worker_page(request: Req, queue: FromPath[str], name: FromQuery[str]
                      ) -> Response[str]:
    """One live worker and the jobs it runs; a page that says so (404) when none has that
    name."""
    principal(request)
    try:
        found = await served(request, queue).worker(name)
    except StreamdelayError as exc:
        return problem(request, "Worker", str(exc), status_of(exc), queue)
    if found is None:
        return problem(request, "Worker", f"No live worker named {name!r} on queue {queue} "
                       f"(it stopped, or its entry expired).", 404, queue,
                       back=f"/q/{quote(queue)}/workers")
    return html(render("worker.html", **base_context(request, queue), page="workers",
                       w=worker_view(queue, found, time.time())))
