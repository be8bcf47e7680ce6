"""Every failure of the HTTP service as ``{"error": {"code", "message", "field"}}``.

One exception handler per family (docs/http.md#errors): a library error keeps its message and
``field``; Litestar's own errors (bad JSON, a wrong type, 401, 403, 404, 405, 413) get a code;
anything else is a 500 with a generic message, logged here with its traceback and never sent.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Literal

import msgspec
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import HTTP_303_SEE_OTHER
from redis.exceptions import RedisError

from ..base import errors
from ..base.masking import mask_text

log = logging.getLogger("streamdelay.web")


# Every code an error body may carry (docs/http.md#errors): one list, so the OpenAPI document
# states them as an enum and mypy refuses a code that is not in it.
ErrorCode = Literal[
    "bad_request", "too_deep", "unauthorized", "forbidden", "not_found", "no_such_queue",
    "no_such_job", "no_such_group", "method_not_allowed", "conflict", "stale_receipt", "aborted",
    "group_taken", "too_large", "unsupported_media", "invalid", "too_many_requests", "busy",
    "request_timeout", "headers_too_large", "too_many_connections", "internal", "unavailable",
    "redis_unavailable", "redis_error", "not_durable", "failed", "error"]


class ErrorDetail(msgspec.Struct):
    """What went wrong: a stable `code`, a readable `message` and the `field` at fault."""

    code: ErrorCode
    message: str
    field: str | None = None


class ErrorBody(msgspec.Struct):
    """The body of every 4xx and 5xx answer."""

    error: ErrorDetail


class ApiError(HTTPException):
    """An error the routes raise with their own status, code and field."""

    def __init__(self, status: int, code: ErrorCode, message: str, field: str | None = None
                 ) -> None:
        super().__init__(detail=message, status_code=status)
        self.code = code
        self.field = field


_CODES: dict[int, ErrorCode] = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 409: "conflict", 413: "too_large", 415: "unsupported_media",
    422: "invalid", 429: "too_many_requests", 500: "internal", 503: "unavailable"}


def error_response(status: int, code: ErrorCode, message: str, field: str | None = None,
                   headers: dict[str, str] | None = None) -> Response[ErrorBody]:
    """The JSON error answer."""
    return Response(ErrorBody(ErrorDetail(code, message, field)), status_code=status,
                    media_type=MediaType.JSON, headers=headers)


def _library_status(exc: errors.StreamdelayError) -> tuple[int, ErrorCode]:
    """The status and code of a library error (by class name for the ones added later)."""
    name = type(exc).__name__
    if name == "StaleReceipt":
        return 409, "stale_receipt"
    if name == "Aborted":  # cancelled with abort while it ran (docs/worker.md#abort)
        return 409, "aborted"
    if isinstance(exc, errors.ValidationError):
        return 422, "invalid"
    if isinstance(exc, errors.JobNotFound):
        return 404, "no_such_job"
    if isinstance(exc, errors.NoSuchQueue):
        return 404, "no_such_queue"
    if isinstance(exc, errors.GroupNotFound):
        return 404, "no_such_group"
    if isinstance(exc, errors.ConfigError) and exc.field == "group":
        return 409, "group_taken"  # the topic is served by another group
    if isinstance(exc, errors.ConnectionFailed):
        return 503, "redis_unavailable"
    if name == "NotDurable":
        return 503, "not_durable"
    return 503, "failed"


_NAMED = re.compile(r"field `([^`]+)`")
_ALIASES = {"job_state": "state"}  # Python names of parameters named otherwise in the API


def _field_of(exc: ValidationException) -> str | None:
    """The field of a Litestar validation error (``$.topic`` -> ``topic``)."""
    extra = exc.extra
    if isinstance(extra, list) and extra and isinstance(extra[0], dict):
        key, message = extra[0].get("key"), str(extra[0].get("message", ""))
        named = _NAMED.search(message)  # "missing required field `topic`", "unknown field"
        if named is not None:
            where = "" if key in (None, "data", "$") else str(key).removeprefix("$.")
            return f"{where}.{named.group(1)}" if where else named.group(1)
        if isinstance(key, str) and key:
            key = key.removeprefix("$.").replace("[...]", "")  # a map's value: the map
            return _ALIASES.get(key, key) or None
    if isinstance(extra, dict) and isinstance(extra.get("field"), str):
        field: str = extra["field"]
        return field
    return None


def _message_of(exc: ValidationException) -> str:
    extra = exc.extra
    if isinstance(extra, list) and extra and isinstance(extra[0], dict):
        found = extra[0].get("message")
        if isinstance(found, str) and found:
            return f"{exc.detail}: {found}"
    return str(exc.detail)


def _wants_html(request: Request[Any, Any, Any]) -> bool:
    return (not request.url.path.startswith("/v1/") and request.method == "GET"
            and "text/html" in request.headers.get("accept", ""))


Described = tuple[int, ErrorCode, str, "str | None", "dict[str, str] | None"]


def describe(exc: Exception, where: str = "") -> Described:
    """(status, code, message, field, headers) of any exception a route may raise; logs the
    ones that are the service's or Redis's fault. Shared by the exception handlers below and
    the enqueue fast path (``web/fastpath.py``)."""
    if isinstance(exc, ApiError):
        return exc.status_code, exc.code, exc.detail, exc.field, exc.headers
    if isinstance(exc, ValidationException):
        return exc.status_code, "bad_request", _message_of(exc), _field_of(exc), None
    if isinstance(exc, HTTPException):
        status = exc.status_code
        field = exc.extra.get("field") if isinstance(exc.extra, dict) else None
        message = exc.detail or _CODES.get(status, "error")
        if status == 413:
            message = "the request body is larger than the service accepts (--max-body-bytes)"
            field = "body"
        return (status, _CODES.get(status, "error"), message,
                field if isinstance(field, str) else None, exc.headers)
    if isinstance(exc, errors.StreamdelayError):
        status, code = _library_status(exc)
        if status >= 500:
            log.warning("request failed: %s: %s", type(exc).__name__, exc)
        return status, code, str(exc), exc.field, None
    if isinstance(exc, RedisError):
        message = mask_text(f"redis: {type(exc).__name__}: {exc}")
        log.warning("%s", message)
        return 503, "redis_error", message, None, None
    log.error("internal error on %s", where or "a request", exc_info=exc)
    return 500, "internal", "internal error (logged by the service)", None, None


def on_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Every exception as the JSON error body (a dashboard page that needs a login redirects
    to it instead)."""
    if isinstance(exc, HTTPException) and exc.status_code == 401 and _wants_html(request):
        return Response(content=None, status_code=HTTP_303_SEE_OTHER,
                        headers={"Location": "/login"})
    status, code, message, field, headers = describe(
        exc, f"{request.method} {request.url.path}")
    return error_response(status, code, message, field, headers)


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: on_exception,
    errors.StreamdelayError: on_exception,
    RedisError: on_exception,
    Exception: on_exception,
}
