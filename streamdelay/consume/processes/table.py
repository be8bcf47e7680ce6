"""The handler table a process executor's children load (docs/worker.md#executors).

A child is started with ``spawn``; the table it is started with names each handler function by
its module and qualified name (and its body type likewise, when the type has a name), so the
child imports the worker's module and finds the same objects there, after it started: a module
that fails to import in a child is reported as the child's load error. Jobs never travel this
way: they cross as msgspec frames (``wire.py``). A handler a child could not find by name
(defined in a function, a lambda) is refused here, when the worker starts, not when a job
arrives.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, NamedTuple

from ...base.errors import ConfigError
from ..delivery import Handler


class Ref(NamedTuple):
    """Where a child imports an object from."""

    module: str
    qualname: str


class Entry(NamedTuple):
    """One topic's handler as a child is started with it: the function by reference, the body
    type by reference when it has a name, else as it is (a generic alias such as ``list[int]``,
    which multiprocessing passes as the start argument it is)."""

    topic: str
    fn: Ref
    body: Ref | Any


def _find(ref: Ref) -> Any:
    """The object ``ref`` names (imports its module)."""
    found: Any = importlib.import_module(ref.module)
    for part in ref.qualname.split("."):
        found = getattr(found, part)
    return found


def _ref(obj: Any) -> Ref | None:
    """``obj``'s module and qualified name when importing them gives ``obj`` back, else None."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    ref = Ref(module, qualname)
    try:
        return ref if _find(ref) is obj else None
    except (ImportError, AttributeError):
        return None


def handler_table(handlers: Mapping[str, Handler]) -> list[Entry]:
    """``handlers`` as the table a child is started with; a ``ConfigError`` (field
    ``handler``) naming the first handler a child could not import by module and name."""
    table = []
    for topic, handler in handlers.items():
        fn = _ref(handler.fn)
        if fn is None:
            raise ConfigError(f"handler: a process executor runs handlers a child process can "
                              f"import by module and name (defined at a module's top level, "
                              f"not in a function or a lambda); topic {topic!r} has "
                              f"{handler.fn!r}", field="handler")
        body = handler.body_type
        table.append(Entry(topic, fn, (_ref(body) or body) if isinstance(body, type) else body))
    return table


def load_table(table: list[Entry]) -> dict[str, Handler]:
    """The handlers of ``table``, imported in this (child) process."""
    return {entry.topic: Handler.wrap(_find(entry.fn),
                                      _find(entry.body) if isinstance(entry.body, Ref)
                                      else entry.body)
            for entry in table}
