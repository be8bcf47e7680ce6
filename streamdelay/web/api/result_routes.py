"""``GET /v1/queues/{queue}/jobs/{id}/result?wait_ms=``: how a job ended, or wait for it
(docs/results.md, docs/http.md#results). It drives ``AsyncQueue.result``: woken by the settle
script, never a poll loop; a stopping service answers a waiting request at once (204)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated, Any

from litestar import Request, Response, get
from litestar.openapi import ResponseSpec
from litestar.params import QueryParameter

from ...base.errors import ResultTimeout
from ...base.models import JobResult
from ..auth import needs
from ..http_errors import ApiError
from .common import PREFIX, READ_ERRORS, JobIdParam, QueueParam, errors, path_value, served

READ = needs("read")
MAX_RESULT_WAIT_MS = 30_000  # as reserve's wait_ms (docs/http.md#results)
WaitMs = Annotated[int, QueryParameter(ge=0, le=MAX_RESULT_WAIT_MS, description=(
    "Wait up to this many ms for the job to end (0: answer at once)."))]


@get(f"{PREFIX}/jobs/:result/{{id:path}}", opt=READ, tags=["producers"],
     operation_id="jobResult", summary="How a job ended (wait for it)",
     responses={204: ResponseSpec(None, description="The job did not end within wait_ms."),
                **errors(*READ_ERRORS)})
async def job_result(request: Request[Any, Any, Any], queue: QueueParam, id: JobIdParam,
                     wait_ms: WaitMs = 0) -> Response[JobResult]:
    """The job's result (``state`` succeeded, dead or cancelled; ``value``; ``error``;
    ``finished`` epoch ms), kept for its ``keep_result``; 204 when it has not ended within
    ``wait_ms``; 404 when the queue does not know the id (or its result is no longer kept)."""
    job_id = path_value(id)
    target = served(request, queue)
    draining: asyncio.Event = request.app.state.service.draining
    waiting = asyncio.ensure_future(target.result(job_id, timeout=wait_ms / 1000))
    stopping = asyncio.ensure_future(draining.wait())
    try:
        await asyncio.wait((waiting, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        if not waiting.done():
            waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, ResultTimeout):
                await waiting
    if not waiting.done() or waiting.cancelled():
        return Response(None, status_code=204)  # type: ignore[arg-type]
    try:
        found = waiting.result()
    except ResultTimeout:
        return Response(None, status_code=204)  # type: ignore[arg-type]
    if found is None:
        raise ApiError(404, "no_such_job", f"id: no job {job_id[:128]!r} (or its result is no "
                       f"longer kept)", "id")
    return Response(found, status_code=200)


ROUTES = [job_result]
