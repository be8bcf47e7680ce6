"""Fleet routes of the JSON API (docs/operations.md#workers, docs/http.md#workers): the live
consumers of a queue, as ``AsyncQueue.workers`` reads them from the fleet record, and one by
name (404 naming it when no live consumer has that name); quiet or stop one (scope ``admin``,
docs/operations.md#quiet-and-stop)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get, post
from litestar.params import PathParameter

from ...base import validation
from ...base.errors import WorkerNotFound
from ...base.fleet import WorkerInfo
from ..auth import needs
from ..http_errors import ApiError
from .common import PREFIX, READ_ERRORS, QueueParam, errors, served

READ, ADMIN = needs("read"), needs("admin")
NameParam = Annotated[str, PathParameter(pattern=validation.CONSUMER.pattern,
                                         description="The worker's (consumer's) name.")]


class RunningJob(msgspec.Struct):
    """A job its handler runs now, and since when (epoch seconds, the worker's clock)."""

    id: str
    since: float


class WorkerAnswer(msgspec.Struct):
    """A live consumer as it last renewed its fleet entry; ``started`` and ``last_seen`` are
    epoch seconds (server clock); ``running`` lists at most 64 jobs, ``running_count`` all."""

    name: str
    kind: str  # worker, or pull (a pull/HTTP consumer)
    host: str
    pid: int
    version: str
    group: str
    topics: list[str]
    concurrency: int
    running: list[RunningJob]
    running_count: int
    started: float
    last_seen: float
    state: Literal["running", "quiet", "stopping"]


class WorkersAnswer(msgspec.Struct):
    """Every live consumer of the queue, by name."""

    workers: list[WorkerAnswer]


def answer(info: WorkerInfo) -> WorkerAnswer:
    """The JSON form of one ``WorkerInfo``."""
    return WorkerAnswer(
        info.name, info.kind, info.host, info.pid, info.version, info.group, list(info.topics),
        info.concurrency, [RunningJob(i, s) for i, s in zip(info.running, info.running_since,
                                                              strict=False)],
        info.running_count, info.started, info.last_seen, info.state)


@get(f"{PREFIX}/workers", opt=READ, tags=["operators"], operation_id="listWorkers",
     summary="The live workers", responses=errors(*READ_ERRORS))
async def list_workers(request: Request[Any, Any, Any], queue: QueueParam) -> WorkersAnswer:
    """Every live consumer of the queue (workers, and pull/HTTP consumers) with what it runs
    now, as each last renewed its entry (a worker within about a second of a change of what it
    runs, else every 15 s)."""
    return WorkersAnswer([answer(w) for w in await served(request, queue).workers()])


@get(f"{PREFIX}/workers/{{name:str}}", opt=READ, tags=["operators"], operation_id="getWorker",
     summary="One live worker", responses=errors(*READ_ERRORS))
async def get_worker(request: Request[Any, Any, Any], queue: QueueParam, name: NameParam
                     ) -> WorkerAnswer:
    """The live consumer named ``name``; 404 when none has that name (gone, or never was)."""
    found = await served(request, queue).worker(name)
    if found is None:
        raise ApiError(404, "not_found", f"name: no live worker named {name[:128]!r} on queue "
                                         f"{queue[:80]!r}", "name")
    return answer(found)


class CommandAnswer(msgspec.Struct):
    """A quiet or stop asked of a worker process; ``changed`` false when it already was."""

    name: str
    command: Literal["quiet", "stop"]
    changed: bool


async def _command(request: Request[Any, Any, Any], queue: str, name: str,
                   verb: Literal["quiet", "stop"]) -> CommandAnswer:
    """Ask the worker; 404 naming ``name`` when no live worker process has it."""
    served_queue = served(request, queue)
    act = served_queue.quiet_worker if verb == "quiet" else served_queue.stop_worker
    try:
        changed = await act(name)
    except WorkerNotFound as exc:
        raise ApiError(404, "not_found", f"{exc} on queue {queue[:80]!r}", "name") from None
    return CommandAnswer(name, verb, changed)


@post(f"{PREFIX}/workers/:quiet/{{name:str}}", opt=ADMIN, status_code=200, tags=["operators"],
      operation_id="quietWorker", summary="Quiet a worker", responses=errors(*READ_ERRORS))
async def quiet_worker(request: Request[Any, Any, Any], queue: QueueParam, name: NameParam
                       ) -> CommandAnswer:
    """Within 2 s the worker process takes no new jobs and finishes its running ones (state
    ``quiet``); 404 when no live worker process has that name."""
    return await _command(request, queue, name, "quiet")


@post(f"{PREFIX}/workers/:stop/{{name:str}}", opt=ADMIN, status_code=200, tags=["operators"],
      operation_id="stopWorker", summary="Stop a worker", responses=errors(*READ_ERRORS))
async def stop_worker(request: Request[Any, Any, Any], queue: QueueParam, name: NameParam
                      ) -> CommandAnswer:
    """Within 2 s the worker process begins its graceful shutdown, as on SIGTERM; 404 when no
    live worker process has that name."""
    return await _command(request, queue, name, "stop")


ROUTES = [list_workers, get_worker, quiet_worker, stop_worker]
