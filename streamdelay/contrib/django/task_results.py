"""What a Django task becomes in streamdelay and back (docs/integrations.md#django):

- a task's job: topic = the Django queue name, body ``{"task": "app.tasks.fn", "args": [...],
  "kwargs": {...}, "priority": p, "run_after": iso|None}`` (Django's priority, kept as given;
  the job's own priority is it mapped onto 0-9);
- its result (a worker writes it when the task returns): the body and ``"queue",
  "return_value", "enqueued", "started", "attempts", "worker"``, so a finished task reads back
  whole once its job is gone;
- a ``TaskResult`` from the job (while it exists: ``Queue.get``) or from that result.
"""

from __future__ import annotations

import builtins
import math
import re
from datetime import datetime, timezone
from typing import Any

from ...base.models import JobInfo, JobResult
from . import framework as fw

DEFAULT_PRIORITY = 5  # streamdelay's default level: where Django's default 0 lands
# the first line of a stored error: "Type: message" (consume/error_text.py); a task's
# exception is stored under its full path (worker.py), other names are streamdelay's own
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_KNOWN = {"HandlerTimeout": "builtins.TimeoutError", "Retry": "streamdelay.Retry",
          "BodyDecodeError": "streamdelay.BodyDecodeError"}


def priority_level(priority: int) -> int:
    """Django's priority (-100..100, higher first, default 0) as streamdelay's 0-9 (higher
    first, default 5): 0 -> 5, 1..25 -> 6, ..., 76..100 -> 9; -1..-20 -> 4, ..., -81..-100 -> 0.
    Monotonic, and a task above (below) the default stays above (below) it."""
    if priority >= 0:
        return DEFAULT_PRIORITY + math.ceil(priority / 25)
    return DEFAULT_PRIORITY - math.ceil(-priority / 20)


def when(ms: int | None) -> datetime | None:
    """Epoch milliseconds (server clock) as an aware UTC datetime."""
    return None if not ms else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def job_body(task: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    """The job body of one call of ``task``."""
    run_after = task.run_after.isoformat() if task.run_after is not None else None
    return {"task": task.module_path, "args": fw.normalize_json(args),
            "kwargs": fw.normalize_json(kwargs), "priority": task.priority,
            "run_after": run_after}


def task_error(text: str) -> Any:
    """A ``TaskError`` from streamdelay's error text: the class path from its first line, the
    whole text as the traceback."""
    first = text.split("\n", 1)[0]
    name = first.split(": ", 1)[0].strip()
    if not _NAME.fullmatch(name):
        path = "builtins.Exception"
    elif "." in name:
        path = name
    elif name in _KNOWN:
        path = _KNOWN[name]
    elif isinstance(getattr(builtins, name, None), type):
        path = f"builtins.{name}"
    else:
        path = "builtins.Exception"
    return fw.TaskError(exception_class_path=path, traceback=text)


def _result(task: Any, result_id: str, status: Any, backend: str, data: dict[str, Any], *,
            enqueued_at: datetime | None = None, started_at: datetime | None = None,
            finished_at: datetime | None = None, errors: list[Any] | None = None) -> Any:
    return fw.TaskResult(
        task=task, id=result_id, status=status, args=data.get("args") or [],
        kwargs=data.get("kwargs") or {}, backend=backend, enqueued_at=enqueued_at,
        started_at=started_at, last_attempted_at=started_at, finished_at=finished_at,
        errors=errors or [], worker_ids=list(data.get("worker_ids") or []))


def from_job(task: Any, info: JobInfo, backend: str) -> Any:
    """The ``TaskResult`` of a job that still exists: waiting (READY), running (RUNNING), or a
    dead letter (FAILED); its last error, if it failed before."""
    status = (fw.TaskResultStatus.RUNNING if info.state == "reserved" else
              fw.TaskResultStatus.FAILED if info.state == "dead" else
              fw.TaskResultStatus.READY)
    workers = [info.consumer or "streamdelay"] * info.attempts
    errors = [task_error(info.error)] if info.error else []
    died = getattr(info, "died", None) if info.state == "dead" else None
    return _result(task, info.id, status, backend, {**info.body, "worker_ids": workers},
                   enqueued_at=when(info.created), finished_at=when(died), errors=errors)


def from_success(task: Any, done: JobResult, backend: str) -> Any:
    """The ``TaskResult`` of a task that returned: from the result its worker wrote."""
    data = done.value
    workers = [data.get("worker") or "streamdelay"] * int(data.get("attempts") or 1)
    found = _result(task, done.id, fw.TaskResultStatus.SUCCESSFUL, backend,
                    {**data, "worker_ids": workers}, enqueued_at=when(data.get("enqueued")),
                    started_at=when(data.get("started")), finished_at=when(done.finished))
    object.__setattr__(found, "_return_value", data.get("return_value"))
    return found


def success_value(queue_name: str, body: dict[str, Any], value: Any, enqueued: int,
                  started: int, attempts: int, worker: str) -> dict[str, Any]:
    """What a worker keeps as the job's result when its task returns ``value``."""
    return {**body, "queue": queue_name, "return_value": fw.normalize_json(value),
            "enqueued": enqueued, "started": started, "attempts": attempts, "worker": worker}
