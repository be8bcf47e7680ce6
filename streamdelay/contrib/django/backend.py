"""``StreamdelayBackend``: a backend of Django's task framework on a streamdelay queue
(docs/integrations.md#django).

    TASKS = {"default": {
        "BACKEND": "streamdelay.contrib.django.StreamdelayBackend",
        "QUEUES": ["default", "emails"],           # Django queue names: the queue's topics
        "OPTIONS": {"url": "redis://localhost:6379/0", "queue": "django"},
    }}

OPTIONS: ``url`` (default ``STREAMDELAY_URL``), ``queue`` (the streamdelay queue, default
``django``), ``keep_result`` (seconds a finished task's result stays readable, default one
day), ``max_attempts`` (default 1: a task that raises is FAILED, as Django's own backends do),
``ttr``; any other key is a ``sd.Queue`` option (``partitions``, ``max_result_bytes``, ...).

One ``sd.Queue`` (and connection pool) per process and configuration, shared by the threads:
Django makes a backend object per thread. Async calls use an ``sd.AsyncQueue`` per event loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from datetime import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from ...base import validation
from ...base.errors import ValidationError
from ...base.models import JobInfo, JobResult
from ...client.queue import AsyncQueue, Queue
from ...io.config import resolve_url
from . import framework as fw
from . import task_results as results

DEFAULT_QUEUE = "django"
DEFAULT_KEEP_RESULT = 86400.0
_QUEUES: dict[tuple[str, str, str], Queue] = {}
_ASYNC: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, str],
                                                                   AsyncQueue]] = (
    weakref.WeakKeyDictionary())
_LOCK = threading.Lock()


class StreamdelayBackend(fw.BaseTaskBackend):  # type: ignore[misc]
    """Django tasks as streamdelay jobs: ``enqueue``/``aenqueue`` (``run_after``, priority),
    ``get_result``/``aget_result`` (status, return value, errors) from any process."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        options = dict(self.options)
        self.url = resolve_url(options.pop("url", None))
        self.queue_name = options.pop("queue", DEFAULT_QUEUE)
        self.keep_result = options.pop("keep_result", DEFAULT_KEEP_RESULT)
        self.max_attempts = options.pop("max_attempts", 1)
        self.ttr = options.pop("ttr", None)
        self.queue_options = options
        try:
            validation.queue_name(self.queue_name)
            for name in self.queues:  # Django's queue names are the queue's topics
                validation.topic(name)
            validation.positive_int(self.max_attempts, "max_attempts", 1000)
        except ValidationError as exc:
            raise ImproperlyConfigured(f"TASKS[{alias!r}]: {exc}") from None
        self._key = (self.url, self.queue_name, repr(sorted(options.items())))

    # --- the queue ----------------------------------------------------------------------

    @property
    def queue(self) -> Queue:
        """The process's ``sd.Queue`` of this configuration."""
        with _LOCK:
            found = _QUEUES.get(self._key)
            if found is None:
                found = _QUEUES[self._key] = Queue(self.queue_name, url=self.url,
                                                   **self.queue_options)
            return found

    def async_queue(self) -> AsyncQueue:
        """The ``sd.AsyncQueue`` of this configuration for the running event loop (an asyncio
        connection pool serves one loop)."""
        loop = asyncio.get_running_loop()
        with _LOCK:
            per_loop = _ASYNC.setdefault(loop, {})
            found = per_loop.get(self._key)
            if found is None:
                found = per_loop[self._key] = AsyncQueue(self.queue_name, url=self.url,
                                                         **self.queue_options)
            return found

    # --- enqueue ------------------------------------------------------------------------

    def _job(self, task: Any, args: Any, kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The job's body and enqueue options for one call of ``task``."""
        self.validate_task(task)
        try:
            body = results.job_body(task, args, kwargs)
        except (TypeError, ValueError) as exc:
            raise fw.InvalidTask(f"task arguments must be JSON: {exc}") from None
        options: dict[str, Any] = {"priority": results.priority_level(task.priority),
                                   "keep_result": self.keep_result,
                                   "max_attempts": self.max_attempts}
        if self.ttr is not None:
            options["ttr"] = self.ttr
        if task.run_after is not None:
            run_after = task.run_after
            if timezone.is_naive(run_after):  # USE_TZ = False: the project's local time
                run_after = timezone.make_aware(run_after)
            options["at"] = run_after
        return body, options

    def _enqueued(self, task: Any, job_id: str, body: dict[str, Any]) -> Any:
        found = fw.TaskResult(
            task=task, id=job_id, status=fw.TaskResultStatus.READY,
            enqueued_at=timezone.now(), started_at=None, last_attempted_at=None,
            finished_at=None, args=body["args"], kwargs=body["kwargs"], backend=self.alias,
            errors=[], worker_ids=[])
        fw.task_enqueued.send(type(self), task_result=found)
        return found

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Enqueue one call of ``task``: a job of topic ``task.queue_name``."""
        body, options = self._job(task, args, kwargs)
        try:
            reply = self.queue.enqueue(task.queue_name, body, **options)
        except ValidationError as exc:  # a queue name no topic can be, a body too big
            raise fw.InvalidTask(str(exc)) from exc
        return self._enqueued(task, reply.id, body)

    async def aenqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """``enqueue`` on the running event loop (no thread)."""
        body, options = self._job(task, args, kwargs)
        try:
            reply = await self.async_queue().enqueue(task.queue_name, body, **options)
        except ValidationError as exc:
            raise fw.InvalidTask(str(exc)) from exc
        return self._enqueued(task, reply.id, body)

    # --- results ------------------------------------------------------------------------

    def _task(self, path: Any, queue_name: str, body: dict[str, Any]) -> Any:
        """The ``Task`` a job runs, as it was enqueued."""
        try:
            found = import_string(str(path))
        except ImportError:
            found = None
        if not isinstance(found, fw.Task):
            raise fw.TaskResultDoesNotExist(f"the task {path!r} cannot be imported")
        run_after = body.get("run_after")
        return found.using(queue_name=queue_name, priority=body.get("priority", 0),
                           backend=self.alias, run_after=(
                               None if run_after is None else
                               datetime.fromisoformat(run_after)))

    def _read(self, result_id: str, info: JobInfo | None, done: JobResult | None) -> Any:
        if info is not None and info.state != "done" and isinstance(info.body, dict):
            return results.from_job(self._task(info.body.get("task"), info.topic, info.body),
                                    info, self.alias)
        if done is not None and done.state == "succeeded" and isinstance(done.value, dict):
            task = self._task(done.value.get("task"), str(done.value.get("queue")), done.value)
            return results.from_success(task, done, self.alias)
        # unknown, or ended without a record of its task (cancelled by an operator, a dead
        # letter purged): nothing to build a TaskResult from
        raise fw.TaskResultDoesNotExist(result_id)

    def get_result(self, result_id: str) -> Any:
        """The ``TaskResult`` of ``result_id``: READY, RUNNING, FAILED (with its error) or
        SUCCESSFUL (with its return value); ``TaskResultDoesNotExist`` for an unknown id."""
        try:
            info = self.queue.get(result_id)
            done = self.queue.result(result_id) if info is None else None
        except ValidationError:
            raise fw.TaskResultDoesNotExist(result_id) from None
        return self._read(result_id, info, done)

    async def aget_result(self, result_id: str) -> Any:
        """``get_result`` on the running event loop (no thread)."""
        queue = self.async_queue()
        try:
            info = await queue.get(result_id)
            done = await queue.result(result_id) if info is None else None
        except ValidationError:
            raise fw.TaskResultDoesNotExist(result_id) from None
        return self._read(result_id, info, done)
