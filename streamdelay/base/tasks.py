"""Typed tasks: a topic bound to its body and result types (docs/typed-tasks.md).

``close = sd.task("order.close", body=CloseOrder, result=Receipt)`` is checked once here (a valid
topic, types msgspec can decode); everywhere a topic string goes, the task resolves to its
``name`` (``validation.topic``), so the wire is the one of a string topic. The generic parameters
are for the type checker: ``q.enqueue(close, body)`` takes a ``CloseOrder`` only,
``@worker.handles(close)`` a handler ``(job: sd.Job[CloseOrder]) -> Receipt``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, overload

import msgspec

from . import validation
from .errors import ConfigError

if TYPE_CHECKING:
    from .models import At, BackoffPolicy, Delay, Job

B = TypeVar("B")  # a task's body type (invariant: a body of another type is refused)
R = TypeVar("R")  # what its handler returns


@dataclass(frozen=True)
class Task(validation.NamedTopic, Generic[B, R]):
    """A topic with its body and result types; made by ``sd.task``. Pass it where a topic goes
    (``enqueue``, ``JobSpec``, ``Worker.handles``): it stands for ``name`` on the wire."""

    name: str
    body: type[B]
    result: type[R]

    def __repr__(self) -> str:
        """``Task('order.close', body=CloseOrder, result=Receipt)``."""
        return (f"Task({self.name!r}, body={_type_name(self.body)}, "
                f"result={_type_name(self.result)})")


def _type_name(kind: Any) -> str:
    return getattr(kind, "__qualname__", None) or repr(kind)


def _decodable(kind: Any, what: str) -> None:
    """Refuse a type msgspec cannot decode into, now rather than at the first job."""
    try:
        msgspec.json.Decoder(kind)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what}: {kind!r} is not a type msgspec can decode ({exc})",
                          field=what) from exc


@overload
def task(name: str, *, body: type[B], result: type[R]) -> Task[B, R]: ...
@overload
def task(name: str, *, body: type[B]) -> Task[B, None]: ...
def task(name: str, *, body: Any, result: Any = None) -> Task[Any, Any]:
    """A typed task: ``sd.task("order.close", body=CloseOrder, result=Receipt)``.

    ``body``: the type every job of the topic carries (a msgspec Struct, a dataclass, ``dict``
    ...), decoded into for its handler; ``result``: the type its handler returns, decoded into
    by ``reply.result()`` (omitted: ``None``). Checked here, once (``ConfigError``)."""
    topic = validation.topic(name)
    _decodable(body, "body")
    kind = type(None) if result is None else result
    _decodable(kind, "result")
    return Task(topic, body, kind)


class JobOptions(TypedDict, total=False):
    """The options of one job, as ``Queue.enqueue`` and ``JobSpec`` take them (by keyword)."""

    delay: Delay | None
    at: At | None
    id: str | None
    ttr: Delay | None
    max_attempts: int | None
    backoff: BackoffPolicy | None
    headers: dict[str, str] | None
    replace: bool
    max_wait: Delay | None
    keep_result: Delay | None
    priority: int | None
    key: str | None
    expires: Delay | None


class EnqueueOptions(JobOptions, total=False):
    """``JobOptions`` and the workflow options of ``Queue.enqueue`` (docs/workflows.md)."""

    after: Sequence[str] | None
    on_parent_failure: str


class TaskHandlers(Generic[B, R]):
    """What ``Worker.handles(task)`` returns: a decorator whose argument the type checker holds
    to ``(job: sd.Job[B]) -> R`` (def) or ``-> Awaitable[R]`` (async def); it registers the
    function and returns it unchanged."""

    def __init__(self, register: Callable[[Any], Any]) -> None:
        self._register = register

    @overload
    def __call__(self, fn: Callable[[Job[B]], Awaitable[R]]
                 ) -> Callable[[Job[B]], Awaitable[R]]: ...
    @overload
    def __call__(self, fn: Callable[[Job[B]], R]) -> Callable[[Job[B]], R]: ...
    def __call__(self, fn: Any) -> Any:
        """Register ``fn`` as the task's handler; returns ``fn``."""
        return self._register(fn)
