"""``/openapi.json``: the document Litestar generates, made honest for client generators
(docs/http.md#openapi).

Litestar's document is close; what it cannot know is finished here, in one pass, from the app's
own route handlers, so a route added later gets the same treatment:

- the public paths (``/jobs/{id}:reschedule``, ``paths.public_path``) and the request bodies the
  routes decode themselves (``bodies.document``);
- each operation's security requirement names the scope its handler needs
  (``{"bearer": ["write"]}``; OpenAPI 3.1 allows role names for any scheme), and a handler that
  needs none says so with ``security: []``;
- an operation without an explicit id gets its handler's name (``healthz``), not Litestar's
  path-and-name default (``HealthzHealthz``);
- every field of an answer is ``required`` (the components the responses use, nested ones too):
  answers are encoded by msgspec, which sends every field of a dataclass or Struct, defaults
  included, so none is ever absent; except a Struct declared ``omit_defaults``, which leaves
  out a field at its default (Litestar's ``required`` is then right and kept);
- descriptions are Markdown: the docstrings' reStructuredText literals become code spans and
  their indentation goes (an indented line would be a code block).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import msgspec
from litestar import Litestar
from litestar.routes import HTTPRoute

from ..auth import SCOPE_OPT
from .bodies import document
from .paths import public_path

_LITERAL = re.compile(r"``([^`]+)``")
QUEUE_DESCRIPTION = ("The queue's name. A queue this service does not serve answers 404 with "
                     "the code `no_such_queue`.")


def _handlers(app: Litestar) -> dict[tuple[str, str], Any]:
    """(public path, method) -> route handler, of the handlers in the document."""
    found: dict[tuple[str, str], Any] = {}
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            if handler.include_in_schema is False:
                continue
            for method in handler.http_methods:
                found[(public_path(route.path_format), method.lower())] = handler
    return found


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.capitalize() for part in rest)


def _markdown(node: Any) -> None:
    """Every ``description`` and ``summary`` under ``node`` with RST literals as code spans."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary") and isinstance(value, str):
                node[key] = _LITERAL.sub(r"`\1`", inspect.cleandoc(value))
            else:
                _markdown(value)
    elif isinstance(node, list):
        for value in node:
            _markdown(value)


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, operation) for path, item in schema.get("paths", {}).items()
            for method, operation in item.items() if isinstance(operation, dict)]


def _refs(node: Any) -> set[str]:
    """The component names ``node`` refers to (``#/components/schemas/NAME``)."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node)) if node else set()
    return set()


def _omitting() -> set[str]:
    """The names of the msgspec Structs that leave out a field at its default."""
    found: set[str] = set()
    todo: list[type[Any]] = [msgspec.Struct]
    while todo:
        for kind in todo.pop().__subclasses__():
            todo.append(kind)
            config = getattr(kind, "__struct_config__", None)
            if config is not None and config.omit_defaults:
                found.add(kind.__name__)
    return found


def _answers(schema: dict[str, Any], components: dict[str, Any]) -> set[str]:
    """The components an answer uses, directly or nested (a request body's are left alone)."""
    todo = set().union(*(_refs(operation.get("responses", {}))
                         for _, _, operation in _operations(schema)))
    found: set[str] = set()
    while todo:
        name = todo.pop()
        if name in components and name not in found:
            found.add(name)
            todo |= _refs(components[name])
    return found


def finish(schema: dict[str, Any], app: Litestar) -> dict[str, Any]:
    """The public document of ``app`` from Litestar's ``schema`` (changed in place)."""
    schema["paths"] = {public_path(path): item for path, item in schema.get("paths",
                                                                                {}).items()}
    handlers = _handlers(app)
    for path, method, operation in _operations(schema):
        handler = handlers.get((path, method))
        if handler is None:
            continue
        scope = handler.opt.get(SCOPE_OPT)
        operation["security"] = [{"bearer": [scope]}] if scope else []
        if not handler.operation_id:
            operation["operationId"] = _camel(handler.handler_name)
        for parameter in operation.get("parameters", []):
            if parameter.get("name") == "queue" and parameter.get("in") == "path":
                parameter["schema"] = {"type": "string"}
                parameter["description"] = QUEUE_DESCRIPTION
    components = schema.get("components", {}).get("schemas", {})
    omitting = _omitting()
    for name in _answers(schema, components) - omitting:
        if "properties" in components[name]:
            components[name]["required"] = sorted(components[name]["properties"])
    document(schema)
    _markdown(schema)
    return schema
