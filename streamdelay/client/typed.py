"""The reply of a typed task's enqueue (docs/typed-tasks.md): the usual ``EnqueueResult`` that
also waits for the job's result and decodes its value into the task's result type.

Built only when ``enqueue`` was given a task (``sd.task``): a string topic's enqueue returns the
plain ``EnqueueResult``, as it always did.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, Protocol, TypeVar

import msgspec

from ..base.errors import BodyDecodeError, JobNotFound
from ..base.models import EnqueueResult, JobResult
from ..base.tasks import Task

R = TypeVar("R")
_UNTYPED = (None, type(None), Any, object)


class _SyncReader(Protocol):
    def result(self, id: str, timeout: float | None = None) -> JobResult | None: ...


class _AsyncReader(Protocol):
    async def result(self, id: str, timeout: float | None = None) -> JobResult | None: ...


def typed_result(found: JobResult | None, job_id: str, kind: type[R]) -> JobResult[R]:
    """``found`` with its value decoded into ``kind``; ``JobNotFound`` when the queue knows no
    such job (its result expired, or it was never kept: ``keep_result``, docs/results.md)."""
    if found is None:
        raise JobNotFound(f"job {job_id!r}: the queue has no such job, and no result kept for "
                          f"it (enqueue with keep_result= to keep one; docs/results.md)",
                          job_id=job_id)
    if found.state != "succeeded" or kind in _UNTYPED:
        return found
    try:
        value = msgspec.convert(found.value, kind)
    except msgspec.ValidationError as exc:
        raise BodyDecodeError(f"result of {job_id!r}: does not decode as "
                              f"{getattr(kind, '__qualname__', kind)} ({exc})",
                              job_id=job_id, field="result") from exc
    return dataclasses.replace(found, value=value)


class Enqueued(EnqueueResult, Generic[R]):
    """What ``Queue.enqueue(task, body)`` returns: the job's ``EnqueueResult`` (``id``, ``due``,
    ``created``, ``state``), and ``result(timeout=)`` to read or wait for how it ended."""

    _queue: _SyncReader
    _task: Task[Any, R]

    def __init__(self, done: EnqueueResult, queue: _SyncReader, task: Task[Any, R]) -> None:
        """The fields of ``done``; ``queue`` and ``task`` serve ``result``."""
        self.__dict__.update(id=done.id, due=done.due, created=done.created, state=done.state,
                             _queue=queue, _task=task)

    def result(self, timeout: float | None = None) -> JobResult[R]:
        """How the job ended, ``value`` decoded into the task's result type: ``Queue.result``
        of its id (``timeout`` seconds to wait for the end, else ``sd.ResultTimeout``)."""
        found = self._queue.result(self.id, timeout=timeout)
        return typed_result(found, self.id, self._task.result)


class AsyncEnqueued(EnqueueResult, Generic[R]):
    """What ``AsyncQueue.enqueue(task, body)`` returns; ``await reply.result(timeout=)``."""

    _queue: _AsyncReader
    _task: Task[Any, R]

    def __init__(self, done: EnqueueResult, queue: _AsyncReader, task: Task[Any, R]) -> None:
        """The fields of ``done``; ``queue`` and ``task`` serve ``result``."""
        self.__dict__.update(id=done.id, due=done.due, created=done.created, state=done.state,
                             _queue=queue, _task=task)

    async def result(self, timeout: float | None = None) -> JobResult[R]:
        """How the job ended, decoded; see ``Enqueued.result``."""
        found = await self._queue.result(self.id, timeout=timeout)
        return typed_result(found, self.id, self._task.result)
