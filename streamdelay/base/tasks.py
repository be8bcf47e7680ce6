"""Typed tasks: a topic bound to its body and result types (docs/typed-tasks.md).

``close = sd.task("order.close", body=CloseOrder, result=Receipt)`` is checked once here (a valid
topic, types msgspec can decode); everywhere a topic string goes, the task resolves to its
``name`` (``validation.topic``), so the wire is the one of a string topic. The generic parameters
are for the type checker: ``q.enqueue(close, body)`` takes a ``CloseOrder`` only,
``@worker.handles(close)`` a handler ``(job: sd.Job[CloseOrder]) -> Receipt``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

import msgspec

from . import validation
from .errors import ConfigError

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
