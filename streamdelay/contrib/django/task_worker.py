"""Running Django tasks in a streamdelay ``Worker`` (``manage.py streamdelay_worker``,
docs/integrations.md#django).

One handler per Django queue name (the topic), a def handler: tasks run in the worker's
threads, an ``async def`` task through the framework's own ``Task.call`` (an event loop of its
thread). Around each run the thread's stale database connections are closed, as Django does
around a request. A task that raises fails its job under its class's full path
(``myapp.errors.Declined: ...``): the stored error text starts with that name, and
``get_result`` reads it back as the ``TaskError``'s ``exception_class_path``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable
from functools import partial
from typing import Any

from django.db import close_old_connections
from django.utils.module_loading import import_string

from ...base.models import Drop, Job, Retry
from ...consume.worker import Worker
from . import framework as fw
from . import task_results as results
from .backend import StreamdelayBackend

_RENAMED: dict[str, type[Exception]] = {}


def build_worker(backend: StreamdelayBackend, queue_names: Iterable[str] | None = None,
                 **options: Any) -> Worker:
    """A ``Worker`` of ``backend``'s queue with a handler for each of ``queue_names`` (default:
    the backend's ``QUEUES``); ``options`` are the Worker's (``concurrency``, ``group``,
    ``dispatch``, ``handler_timeout``, ...)."""
    names = sorted(queue_names or backend.queues)
    if not names:
        raise ValueError("name the queues to run (QUEUES of the backend is empty)")
    worker = Worker(backend.queue, **options)
    for name in names:
        worker.handler(name)(partial(run_task, backend, worker))
    return worker


def _renamed(exc: Exception) -> Exception:
    """``exc`` as an exception whose type is named by the full path of ``exc``'s class, with
    the same message, traceback and cause: what the stored error text starts with."""
    path = fw.module_path(type(exc))
    kind = _RENAMED.get(path)
    if kind is None:
        kind = _RENAMED[path] = type(path, (Exception,), {"__module__": "builtins",
                                                          "__qualname__": path})
    try:
        message = str(exc)
    except Exception:
        message = f"<unprintable {type(exc).__name__} object>"
    renamed = kind(message)
    renamed.__cause__ = exc.__cause__
    renamed.__context__ = exc.__context__
    renamed.__suppress_context__ = exc.__suppress_context__
    return renamed.with_traceback(exc.__traceback__)


def run_task(backend: StreamdelayBackend, worker: Worker, job: Job) -> Any:
    """Run the task of ``job``; its result is the task's return value with what
    ``get_result`` needs to read it back (``results.success_value``)."""
    body = job.body
    task = import_string(body["task"])
    started = int(time.time() * 1000)
    running = fw.TaskResult(
        task=task, id=job.id, status=fw.TaskResultStatus.RUNNING,
        enqueued_at=results.when(job.created), started_at=results.when(started),
        last_attempted_at=results.when(started), finished_at=None,
        args=body.get("args", []), kwargs=body.get("kwargs", {}), backend=backend.alias,
        errors=[], worker_ids=[worker.consumer] * job.attempt)
    close_old_connections()
    fw.task_started.send(sender=type(backend), task_result=running)
    failed: Exception | None = None
    try:
        if task.takes_context:
            value = task.call(fw.TaskContext(task_result=running), *running.args,
                              **running.kwargs)
        else:
            value = task.call(*running.args, **running.kwargs)
        kept = results.success_value(job.topic, body, value, job.created, started,
                                     job.attempt, worker.consumer)
    except (Retry, Drop):  # streamdelay's own requests from a task pass as they are
        raise
    except Exception as exc:
        failed = exc
        # the signal goes out while the exception is being handled: receivers that log it
        # (the framework's own) see its traceback
        _finished(backend, running, fw.TaskResultStatus.FAILED, errors=[fw.TaskError(
            exception_class_path=fw.module_path(type(exc)),
            traceback="".join(traceback.format_exception(exc)))])
    finally:
        close_old_connections()
    if failed is not None:
        raise _renamed(failed)  # outside the except: no context of our own is added
    object.__setattr__(running, "_return_value", kept["return_value"])
    _finished(backend, running, fw.TaskResultStatus.SUCCESSFUL)
    return kept


def _finished(backend: StreamdelayBackend, running: Any, status: Any,
              errors: list[Any] | None = None) -> None:
    """Mark ``running`` ended with ``status`` and send ``task_finished``."""
    object.__setattr__(running, "finished_at", results.when(int(time.time() * 1000)))
    object.__setattr__(running, "status", status)
    running.errors.extend(errors or [])
    fw.task_finished.send(sender=type(backend), task_result=running)
