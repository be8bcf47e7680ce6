"""Request bodies: decoded strictly by msgspec straight from the bytes, and documented.

Litestar's own body parameter converts leniently (``"5"`` would pass for an int) and goes
through a dict first; the routes read their body with ``decode`` instead, which is exact and
faster, and ``document`` adds each operation's request body to the OpenAPI document from the
same Structs (``msgspec.json.schema_components``: patterns, ranges, unknown fields refused).
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import msgspec
from litestar import Request

from ..body_depth import too_deep
from ..http_errors import ApiError

T = TypeVar("T")
_AT = re.compile(r" - at `\$\.?([^`]*)`$")
_NAMED = re.compile(r"field `([^`]+)`")
# operationId -> (body type, required); filled by the route modules
BODIES: dict[str, tuple[type[Any], bool]] = {}


def body(operation_id: str, kind: type[Any], required: bool = True) -> str:
    """Register the body of an operation for the document; returns the operation id."""
    BODIES[operation_id] = (kind, required)
    return operation_id


def _field(message: str) -> str | None:
    found = _AT.search(message)
    where = found.group(1).replace("[...]", "") if found else ""
    named = _NAMED.search(message)
    if named is not None:
        return f"{where}.{named.group(1)}" if where else named.group(1)
    return where or None


async def decode(request: Request[Any, Any, Any], kind: type[T]) -> T:
    """The body as ``kind``; 400 naming the field when it is missing or does not fit."""
    return required(await decode_optional(request, kind))


def required(found: T | None) -> T:
    """A body that must be there: 400 when it is empty."""
    if found is None:
        raise ApiError(400, "bad_request", "the request needs a JSON body", "body")
    return found


async def decode_optional(request: Request[Any, Any, Any], kind: type[T]) -> T | None:
    """The body as ``kind``, or None when there is none."""
    return decode_bytes(await request.body(), kind)


def decode_bytes(data: bytes, kind: type[T]) -> T | None:
    """``data`` (JSON) as ``kind``, None when empty; 400 naming the field when it does not
    fit, 400 ``too_deep`` when nested deeper than the decoder's recursion allows, 400 naming
    ``body`` when it is not JSON (bytes that are not UTF-8 included: msgspec raises
    ``UnicodeDecodeError`` for those inside a string, not a ``DecodeError``)."""
    if not data.strip():
        return None
    try:
        decoded: T = msgspec.json.decode(data, type=kind)
    except RecursionError:
        raise too_deep() from None
    except msgspec.ValidationError as exc:
        message = str(exc)
        raise ApiError(400, "bad_request", message, _field(message)) from None
    except msgspec.DecodeError as exc:
        where = lone_surrogate(data)
        if where is not None:
            raise ApiError(400, "bad_request", f"{where}: a string with a lone UTF-16 surrogate "
                           "escape (\\ud800 to \\udfff not in a pair) is valid JSON but no "
                           "text: jobs keep text as UTF-8, which has no form for it; send the "
                           "text without it, or bytes as base64", where) from None
        raise ApiError(400, "bad_request", f"the body is not valid JSON: {exc}", "body"
                       ) from None
    except UnicodeDecodeError:
        raise ApiError(400, "bad_request", "the body is not valid JSON: a string in it is not "
                       "UTF-8", "body") from None
    return decoded


def _is_lone(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


def lone_surrogate(data: bytes) -> str | None:
    """Where the JSON ``data`` holds a lone UTF-16 surrogate escape (``"\\ud800"``), as a field
    path (``result``, ``body.names[1]``; the whole body: ``body``), the first in document
    order; None when it holds none or is not JSON. msgspec refuses such a string (it decodes
    to UTF-8, which has no form for it); Python's own decoder keeps it, so it finds it."""
    if b"\\u" not in data:  # no escape: no lone surrogate
        return None
    try:
        found = json.loads(data, parse_constant=float)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[str, Any]] = [("", found)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str) and _is_lone(value):
            return path or "body"
        if isinstance(value, dict):
            for key in value:  # a key with one: the object it is in
                if _is_lone(key):
                    return path or "body"
            stack.extend((f"{path}.{key}" if path else key, item)
                         for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item)
                         for index, item in reversed(list(enumerate(value))))
    return None


def document(schema: dict[str, Any]) -> None:
    """Add the registered request bodies (and their component schemas) to ``schema``."""
    kinds = sorted({kind for kind, _ in BODIES.values()}, key=lambda kind: kind.__name__)
    refs, components = msgspec.json.schema_components(
        kinds, ref_template="#/components/schemas/{name}")
    schema.setdefault("components", {}).setdefault("schemas", {}).update(components)
    by_kind = dict(zip(kinds, refs, strict=True))
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            found = BODIES.get(operation.get("operationId", "")) if isinstance(
                operation, dict) else None
            if found is not None:
                kind, required = found
                operation["requestBody"] = {"required": required, "content": {
                    "application/json": {"schema": by_kind[kind]}}}
