"""The task framework the backend plugs into: Django's own ``django.tasks`` (Django >= 6.0,
Python >= 3.12), else the ``django-tasks`` backport (``django_tasks``), which has the same
classes under the same names (docs/integrations.md#django).

Everything is looked up here once, as plain attributes, so the backend and the worker read one
set of names whichever package provides them.
"""

from __future__ import annotations

import importlib
from typing import Any


def _framework() -> str:
    """``django.tasks`` when this Django has it, else ``django_tasks``."""
    try:
        importlib.import_module("django.tasks")
    except ImportError:
        try:
            importlib.import_module("django_tasks")
        except ImportError:
            raise ImportError("streamdelay.contrib.django needs Django >= 6.0 (django.tasks) "
                              "or the django-tasks backport: pip install "
                              "'streamdelay[django]'") from None
        return "django_tasks"
    return "django.tasks"


NAME = _framework()
_base: Any = importlib.import_module(f"{NAME}.base")
_backends: Any = importlib.import_module(f"{NAME}.backends.base")
_exceptions: Any = importlib.import_module(f"{NAME}.exceptions")
_signals: Any = importlib.import_module(f"{NAME}.signals")

BaseTaskBackend: Any = _backends.BaseTaskBackend
Task: Any = _base.Task
TaskResult: Any = _base.TaskResult
TaskResultStatus: Any = _base.TaskResultStatus
TaskError: Any = _base.TaskError
TaskContext: Any = _base.TaskContext
TaskResultDoesNotExist: Any = _exceptions.TaskResultDoesNotExist
# the backport says InvalidTaskError, Django InvalidTask
InvalidTask: Any = getattr(_exceptions, "InvalidTask", None) or _exceptions.InvalidTaskError
task_enqueued: Any = _signals.task_enqueued
task_started: Any = _signals.task_started
task_finished: Any = _signals.task_finished
TASK_REFRESH_ATTRS: frozenset[str] = frozenset(_base.TASK_REFRESH_ATTRS)


def task_backends() -> Any:
    """The framework's backend handler (``task_backends[alias]``)."""
    return importlib.import_module(NAME).task_backends


def normalize_json(value: Any) -> Any:
    """The framework's own JSON normalizing of arguments and return values (tuples as lists;
    a value JSON cannot hold is refused with ``TypeError``)."""
    try:
        helper = importlib.import_module("django.utils.json").normalize_json
    except (ImportError, AttributeError):
        helper = importlib.import_module("django_tasks.utils").normalize_json
    return helper(value)


def module_path(value: Any) -> str:
    """``module.qualname`` of a class or function, as the framework names them."""
    return f"{value.__module__}.{value.__qualname__}"
