"""The Worker's handler table: ``handler`` and ``handles`` register a function per topic,
``topics`` lists them (docs/worker.md#handlers, docs/typed-tasks.md). A base of
``worker.Worker``: what a user registers, apart from how the worker runs it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..base import validation
from ..base.errors import ConfigError
from ..base.models import TaskHandlers
from ..base.tasks import B, R, Task
from .delivery import Handler, HandlerFn

F = TypeVar("F", bound=HandlerFn)


class HandlerTable:
    """The registered handlers, by topic (the Worker's ``handlers``)."""

    handlers: dict[str, Handler]

    def handler(self, topic: str, *, body: Any = None) -> Callable[[F], F]:
        """Decorator: run ``fn(job)`` for jobs of ``topic``; ``body=`` a type to decode into."""
        name = validation.topic(topic)

        def register(fn: F) -> F:
            if not callable(fn):
                raise ConfigError("handler: must be a function", field="handler", topic=name)
            if name in self.handlers:
                raise ConfigError(f"topic: {name!r} already has a handler", field="topic")
            self.handlers[name] = Handler.wrap(fn, body)
            return fn

        return register

    def handles(self, task: Task[B, R]) -> TaskHandlers[B, R]:
        """Decorator: run ``fn(job)`` for the jobs of a typed task (``sd.task``), their bodies
        decoded into its body type; the type checker holds ``fn`` to ``(job: sd.Job[B]) -> R``,
        def or async def (docs/typed-tasks.md)."""
        if not isinstance(task, Task):
            raise ConfigError(f"handles: expected a task made by sd.task(), got "
                              f"{type(task).__name__} (a string topic: use handler())",
                              field="handler")
        return TaskHandlers(self.handler(task.name, body=task.body))

    @property
    def topics(self) -> list[str]:
        """The topics this worker has handlers for, sorted."""
        return sorted(self.handlers)
