"""Loading the worker of ``streamdelay worker MODULE:NAME``: its import (with one-line errors
for a module that is missing or fails), and the command line's settings applied to it.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from typing import Any

from ..consume.worker import Worker
from .support import DEBUG_ENV, OperationFailed, UsageProblem, debug_wanted


def _import_module(name: str) -> Any:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageProblem(f"WORKER: cannot import module {name!r} ({exc}); run from the "
                               f"directory that contains it or set PYTHONPATH") from exc
        if debug_wanted():
            raise
        raise _import_failed(name, exc) from exc
    except Exception as exc:
        if debug_wanted():
            raise
        raise _import_failed(name, exc) from exc


def _import_failed(name: str, exc: Exception) -> OperationFailed:
    return OperationFailed(f"WORKER: importing module {name!r} failed: {type(exc).__name__}: "
                           f"{exc} (set {DEBUG_ENV}=1 for the traceback)")


def _find_worker(module: Any, target: str) -> Any:
    found = [value for value in vars(module).values() if isinstance(value, Worker)]
    if len(found) != 1:
        what = "no" if not found else "several"
        raise UsageProblem(f"WORKER: module {target!r} has {what} streamdelay Worker objects; "
                           f"name one as {target}:NAME")
    return found[0]


def load_worker(target: str) -> Worker:
    """Import ``module:attribute`` (or ``module`` holding exactly one Worker) and return it.

    The attribute may be a Worker or a function with no arguments that returns one.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name:
        raise UsageProblem(f"WORKER: {target!r} is not MODULE:NAME (example: myapp.jobs:worker)")
    module = _import_module(module_name)
    if not attribute:
        return _find_worker(module, target)  # type: ignore[no-any-return]
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageProblem(f"WORKER: module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, Worker) and callable(value):
        value = value()
    if not isinstance(value, Worker):
        raise UsageProblem(f"WORKER: {target!r} is a {type(value).__name__}, not a "
                           f"streamdelay Worker")
    return value


def with_overrides(
    worker: Worker, *, url: str | None, concurrency: int | None, group: str | None,
    dispatch: bool | None, partitions: int | None = None,
) -> Worker:
    """The worker with command-line settings applied (a new Worker with the same handlers)."""
    if (url is None and concurrency is None and group is None and dispatch is None
            and partitions in (None, worker.config.partitions)):
        return worker
    config = worker.config if url is None else dataclasses.replace(worker.config, url=url)
    if partitions is not None:
        config = dataclasses.replace(config, partitions=partitions)
    changes: dict[str, Any] = {name: value for name, value in (
        ("group", group), ("concurrency", concurrency), ("dispatch", dispatch))
        if value is not None}
    rebuilt = worker.replace(config=config, **changes)  # every other setting kept as it was
    return rebuilt

