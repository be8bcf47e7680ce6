"""Workflow routes of the JSON API (docs/workflows.md, docs/http.md#workflows): ``jobs:chain``,
the batch form of ``jobs:batch`` (members with callbacks) and ``GET .../batches/{id}``. Each
calls the same ``AsyncQueue`` method a Python producer calls."""

from __future__ import annotations

from typing import Any

from litestar import Request, get, post

from ...base.errors import StreamdelayError
from ...base.flows import BatchInfo
from ...base.models import JobSpec
from ...client.queue import AsyncQueue
from ..auth import needs
from ..http_errors import ApiError
from .api_models import BatchAnswer, BatchBody, ChainBody, EnqueueBody, to_spec
from .bodies import body, decode
from .common import (
    PREFIX,
    READ_ERRORS,
    WRITE_ERRORS,
    JobIdParam,
    QueueParam,
    errors,
    path_value,
    served,
)

READ, WRITE = needs("read"), needs("write")


def _specs(jobs: list[EnqueueBody], where: str = "jobs") -> list[JobSpec]:
    specs = []
    for index, job in enumerate(jobs):
        if job.after is not None:
            raise ApiError(422, "invalid", f"{where}[{index}]: after: not in a chain or batch "
                           f"(its order gives the parents)", f"{where}[{index}].after")
        try:
            specs.append(to_spec(job))
        except StreamdelayError as exc:
            field = getattr(exc, "field", None)
            raise ApiError(422, "invalid", f"{where}[{index}]: {exc}",
                           f"{where}[{index}].{field}" if field else f"{where}[{index}]"
                           ) from None
    return specs


def _callback(job: EnqueueBody | None, name: str) -> JobSpec | None:
    if job is None:
        return None
    if job.after is not None:
        raise ApiError(422, "invalid", f"{name}: after: a callback waits for the batch",
                       f"{name}.after")
    return to_spec(job)


async def enqueue_members(target: AsyncQueue, data: BatchBody) -> BatchAnswer:
    """The batch form of ``jobs:batch``: members, callbacks, close."""
    info = await target.batch(_specs(data.jobs), id=data.batch,
                              on_success=_callback(data.on_success, "on_success"),
                              on_complete=_callback(data.on_complete, "on_complete"),
                              close=data.close)
    return BatchAnswer([], info)


@post(f"{PREFIX}/jobs/:chain", opt=WRITE, status_code=200, tags=["producers"],
      operation_id=body("enqueueChain", ChainBody), summary="Enqueue a chain of jobs",
      responses=errors(*WRITE_ERRORS))
async def enqueue_chain(request: Request[Any, Any, Any], queue: QueueParam) -> BatchAnswer:
    """Schedule jobs that run one after the other: each waits until the one before has
    succeeded (the first is due at once or after its delay). One result per job, in order."""
    target = served(request, queue)
    data = await decode(request, ChainBody)
    return BatchAnswer(await target.chain(_specs(data.jobs),
                                          on_parent_failure=data.on_parent_failure))


@get(f"{PREFIX}/batches/{{id:path}}", opt=READ, tags=["operators"], operation_id="getBatch",
     summary="Read a batch's progress", responses=errors(*READ_ERRORS))
async def get_batch(request: Request[Any, Any, Any], queue: QueueParam, id: JobIdParam
                    ) -> BatchInfo:
    """Members, succeeded, dead, pending, state and the callbacks' job ids."""
    batch_id = path_value(id)
    found = await served(request, queue).batch_info(batch_id)
    if found is None:
        raise ApiError(404, "not_found", f"id: no batch {batch_id[:128]!r}", "id")
    return found


ROUTES = [enqueue_chain, get_batch]
