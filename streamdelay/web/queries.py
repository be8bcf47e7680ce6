"""Query parameters declared as integers take whole numbers only (docs/http.md#errors).

Litestar converts a query value to ``int`` leniently (msgspec's ``strict=False``), so ``1e3``
and ``10.0`` would pass for 1000 and 10 while the documented type is an integer. The app's
``before_request`` hook (``check_whole_numbers``) runs after routing and before the values are
converted: a value of an integer query parameter that is not plain digits is a 400 naming the
parameter, for every route at once, today's and the next one.
"""

from __future__ import annotations

import functools
import re
from types import NoneType
from typing import Any

from litestar import Request
from litestar.enums import ParamType
from litestar.handlers import HTTPRouteHandler

from .http_errors import ApiError

WHOLE = re.compile(r"^-?[0-9]{1,18}$")  # a sign is the range check's to refuse, with its range


@functools.cache
def integer_queries(handler: HTTPRouteHandler) -> tuple[str, ...]:
    """The query keys of ``handler`` whose parameter is an ``int`` (or ``int | None``)."""
    found = []
    paths = {name for path in handler.paths for name in re.findall(r"{(\w+)", path)}
    for name, definition in handler.parsed_fn_signature.parameters.items():
        kwarg = definition.kwarg_definition
        kind = getattr(kwarg, "param_type", ParamType.QUERY)
        if name in paths or kind is not ParamType.QUERY:
            continue
        types = ({inner.annotation for inner in definition.inner_types} - {NoneType}
                 if definition.is_optional else {definition.annotation})
        if types == {int}:
            found.append(getattr(kwarg, "name", None) or name)
    return tuple(found)


async def check_whole_numbers(request: Request[Any, Any, Any]) -> None:
    """400 naming the parameter when an integer query parameter's value is not a whole
    number (``1e3``, ``10.0``); the range and the rest are Litestar's checks, after this."""
    handler = request.route_handler
    if not isinstance(handler, HTTPRouteHandler):
        return
    for key in integer_queries(handler):
        for value in request.query_params.getall(key, ()):
            if not WHOLE.match(value):
                raise ApiError(400, "bad_request",
                               f"{key}: {value[:40]!r} is not a whole number", key)
