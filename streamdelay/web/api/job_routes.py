"""Producer and operator routes of the JSON API (docs/http.md#producers): enqueue, batch, get,
cancel, reschedule, list, stats, dead letters, pause and resume. Each calls the same
``AsyncQueue`` method a Python producer calls."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from litestar import Request, Response, delete, get, post
from litestar.openapi import ResponseSpec
from litestar.params import FromQuery, QueryParameter

from ...base.models import EnqueueResult, JobInfo, QueueStats
from ...client.enqueuing import prepare_values
from ...client.queue import AsyncQueue
from ..auth import needs
from ..http_errors import ApiError
from .api_models import (
    BatchAnswer,
    BatchBody,
    DeadAnswer,
    DeadPurgeBody,
    DeadReplayBody,
    Done,
    EnqueueBody,
    JobsAnswer,
    PauseAnswer,
    RescheduleBody,
    at_of,
    job_values,
    seconds_of,
    to_spec,
)
from .api_models import Count as CountAnswer
from .bodies import body, decode, decode_optional
from .common import (
    PREFIX,
    READ_ERRORS,
    WRITE_ERRORS,
    JobIdParam,
    QueueParam,
    TopicParam,
    TopicQuery,
    errors,
    path_value,
    served,
)
from .flow_routes import enqueue_members

READ, WRITE, ADMIN = needs("read"), needs("write"), needs("admin")
Limit = Annotated[int, QueryParameter(ge=1, le=1000, description="At most this many jobs.")]
JobStateParam = Annotated[Literal["delayed", "ready", "reserved", "dead", "waiting"],
                          QueryParameter(name="state", description="Which jobs to list.")]
DeadLimit = Annotated[int, QueryParameter(ge=1, le=10_000, description="At most this many.")]
Abort = Annotated[bool, QueryParameter(description="Also stop the job's handler if it runs.")]


def _missing(job_id: str) -> ApiError:
    return ApiError(404, "no_such_job", f"id: no job {job_id[:128]!r}", "id")


@post(f"{PREFIX}/jobs", opt=WRITE, status_code=201, tags=["producers"],
      operation_id=body("enqueue", EnqueueBody), summary="Enqueue a job",
      responses={200: ResponseSpec(EnqueueResult, description="The id existed: nothing was "
                                   "created (or it was rescheduled with replace)."),
                 **errors(*WRITE_ERRORS)})
async def enqueue(request: Request[Any, Any, Any], queue: QueueParam) -> Response[EnqueueResult]:
    """Schedule one job; 201 when created, 200 when its id existed."""
    result = await enqueue_job(served(request, queue), await decode(request, EnqueueBody))
    return Response(result, status_code=201 if result.created else 200)


async def enqueue_job(target: AsyncQueue, data: EnqueueBody) -> EnqueueResult:
    """Enqueue one request job (this route and the fast path of ``web/fastpath.py``)."""
    spec = to_spec(data)
    return await target.enqueue(spec.topic, spec.body, delay=spec.delay, at=spec.at,
                                id=spec.id, ttr=spec.ttr, max_attempts=spec.max_attempts,
                                backoff=spec.backoff, headers=spec.headers,
                                replace=spec.replace, keep_result=spec.keep_result,
                                priority=spec.priority, key=spec.key, expires=spec.expires,
                                after=data.after, on_parent_failure=data.on_parent_failure,
                                keep_done=spec.keep_done)


@post(f"{PREFIX}/jobs/:batch", opt=WRITE, status_code=200, tags=["producers"],
      operation_id=body("enqueueBatch", BatchBody), summary="Enqueue many jobs",
      responses=errors(*WRITE_ERRORS))
async def enqueue_batch(request: Request[Any, Any, Any], queue: QueueParam) -> BatchAnswer:
    """Schedule many jobs in one round trip; one result per job, in order. A job the library
    refuses fails the whole request (422 with its index in the message) before any is
    written."""
    target = served(request, queue)
    data = await decode(request, BatchBody)
    if data.batch is not None or data.on_success or data.on_complete:
        return await enqueue_members(target, data)  # web/api/flow_routes.py, docs/workflows.md
    cfg = target.config
    prepared = []
    for index, job in enumerate(data.jobs):  # the library's own validation, job by job
        if job.after is not None:
            raise ApiError(422, "invalid", f"jobs[{index}]: after: only for a one-job enqueue "
                           f"or jobs:chain", f"jobs[{index}].after")
        try:
            prepared.append(prepare_values(cfg, *job_values(job)))
        except ApiError:
            raise
        except Exception as exc:
            field = getattr(exc, "field", None)
            raise ApiError(422, "invalid", f"jobs[{index}]: {exc}",
                           f"jobs[{index}].{field}" if field else f"jobs[{index}]") from None
    return BatchAnswer(await target.enqueue_prepared(prepared))


@get(f"{PREFIX}/jobs/{{id:path}}", opt=READ, tags=["operators"], operation_id="getJob",
     summary="Read a job", responses=errors(*READ_ERRORS))
async def get_job(request: Request[Any, Any, Any], queue: QueueParam,
                  id: JobIdParam) -> JobInfo:
    """The job with its state, body, attempts and last error."""
    job_id = path_value(id)
    found = await served(request, queue).get(job_id)
    if found is None:
        raise _missing(job_id)
    return found


@delete(f"{PREFIX}/jobs/{{id:path}}", opt=WRITE, status_code=200, tags=["producers"],
        operation_id="cancelJob", summary="Cancel a job", responses=errors(*READ_ERRORS),
        description=("Remove the job in any state; 404 when there is none. `?abort=true` also "
                     "stops its handler if it runs (within about 1 s): the job ends cancelled, "
                     "its result and event say aborted, an HTTP consumer's next touch answers "
                     "409 `aborted`."))
async def cancel_job(request: Request[Any, Any, Any], queue: QueueParam, id: JobIdParam,
                     abort: Abort = False) -> Done:
    """Remove the job in any state, or abort it (docs/worker.md#abort); the route's
    ``description`` is the document's text."""
    job_id = path_value(id)
    if not await served(request, queue).cancel(job_id, abort=abort):
        raise _missing(job_id)
    return Done(job_id)


@post(f"{PREFIX}/jobs/:reschedule/{{id:path}}", opt=WRITE, status_code=200,
      tags=["producers"], operation_id=body("rescheduleJob", RescheduleBody, False),
      summary="Give a job a new due time",
      responses=errors(*WRITE_ERRORS))
async def reschedule_job(request: Request[Any, Any, Any], queue: QueueParam, id: JobIdParam
                         ) -> Done:
    """Move the job to ``delay`` seconds from now or ``at`` a time (neither: now)."""
    job_id = path_value(id)
    data = await decode_optional(request, RescheduleBody) or RescheduleBody()
    delay, at = seconds_of(data.delay, "delay"), at_of(data.at)
    if delay is None and at is None:
        delay = 0
    if not await served(request, queue).reschedule(job_id, delay=delay, at=at):
        raise _missing(job_id)
    return Done(job_id)


@get(f"{PREFIX}/jobs", opt=READ, tags=["operators"], operation_id="listJobs",
     summary="List jobs by state", responses=errors(*READ_ERRORS))
async def list_jobs(request: Request[Any, Any, Any], queue: QueueParam,
                    job_state: JobStateParam,
                    topic: FromQuery[str | None] = None, limit: Limit = 100,
                    cursor: FromQuery[str | None] = None) -> JobsAnswer:
    """One page of the jobs in ``state``: delayed by due time, waiting (for their parents) by
    enqueue time, the others in stream order."""
    page = await served(request, queue).jobs(job_state, topic=topic, limit=limit, cursor=cursor)
    return JobsAnswer(page.jobs, page.cursor)


@get(f"{PREFIX}/stats", opt=READ, tags=["operators"], operation_id="stats",
     summary="Counts per topic", responses=errors(*READ_ERRORS))
async def stats(request: Request[Any, Any, Any], queue: QueueParam) -> QueueStats:
    """Per topic: delayed, ready, reserved, dead, lag_ms, group and paused."""
    return await served(request, queue).stats()


@get(f"{PREFIX}/dead", opt=READ, tags=["operators"], operation_id="listDead",
     summary="List dead letters", responses=errors(*READ_ERRORS))
async def list_dead(request: Request[Any, Any, Any], queue: QueueParam,
                    topic: TopicQuery = None, limit: DeadLimit = 100) -> DeadAnswer:
    """The oldest dead-letter entries (all topics, or one)."""
    return DeadAnswer(await served(request, queue).dead_list(topic, limit))


@post(f"{PREFIX}/dead/:replay", opt=ADMIN, status_code=200, tags=["operators"],
      operation_id=body("replayDead", DeadReplayBody, False), summary="Put dead jobs back",
      responses=errors(*WRITE_ERRORS))
async def replay_dead(request: Request[Any, Any, Any], queue: QueueParam) -> CountAnswer:
    """Dead jobs (all, a topic's, or one id) become new attempts, due after ``delay``."""
    data = await decode_optional(request, DeadReplayBody) or DeadReplayBody()
    count = await served(request, queue).dead_replay(data.topic, data.id,
                                                     seconds_of(data.delay, "delay"))
    return CountAnswer(count)


@post(f"{PREFIX}/dead/:purge", opt=ADMIN, status_code=200, tags=["operators"],
      operation_id=body("purgeDead", DeadPurgeBody, False), summary="Forget dead jobs",
      responses=errors(*WRITE_ERRORS))
async def purge_dead(request: Request[Any, Any, Any], queue: QueueParam) -> CountAnswer:
    """Forget dead jobs (all, a topic's, or one id)."""
    data = await decode_optional(request, DeadPurgeBody) or DeadPurgeBody()
    return CountAnswer(await served(request, queue).dead_purge(data.topic, data.id))


@post(f"{PREFIX}/topics/:pause/{{topic:str}}", opt=ADMIN, status_code=200,
      tags=["operators"], operation_id="pauseTopic", summary="Pause a topic",
      responses=errors(*READ_ERRORS))
async def pause_topic(request: Request[Any, Any, Any], queue: QueueParam, topic: TopicParam
                      ) -> PauseAnswer:
    """Within 1 s no consumer starts a job of the topic (running ones finish)."""
    changed = await served(request, queue).pause(topic)
    return PauseAnswer(topic, True, changed)


@post(f"{PREFIX}/topics/:resume/{{topic:str}}", opt=ADMIN, status_code=200,
      tags=["operators"], operation_id="resumeTopic", summary="Resume a topic",
      responses=errors(*READ_ERRORS))
async def resume_topic(request: Request[Any, Any, Any], queue: QueueParam, topic: TopicParam
                       ) -> PauseAnswer:
    """Consumers start the topic's jobs again."""
    changed = await served(request, queue).resume(topic)
    return PauseAnswer(topic, False, changed)


ROUTES = [enqueue, enqueue_batch, get_job, cancel_job, reschedule_job, list_jobs, stats,
          list_dead, replay_dead, purge_dead, pause_topic, resume_topic]
