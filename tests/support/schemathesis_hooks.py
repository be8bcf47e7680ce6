"""schemathesis hooks for tests/system/test_web_openapi.py (loaded through SCHEMATHESIS_HOOKS): long
polls are capped at 200 ms so the fuzzing run stays short (the schema allows 30 s), and the
``queue`` path parameter (a plain string in the document) is the served queue named by
``STREAMDELAY_FUZZ_QUEUE``, so the fuzzing reaches the routes rather than the 404 of a queue
this service does not serve."""

from __future__ import annotations

import os
from typing import Any

import schemathesis

MAX_WAIT_MS = 200


@schemathesis.hook
def map_body(context: Any, body: Any) -> Any:
    """Cap ``wait_ms`` of reserve bodies."""
    operation = getattr(context, "operation", None)
    path = getattr(operation, "path", "") or ""
    if path.endswith(":reserve") and isinstance(body, dict):
        wait = body.get("wait_ms")
        if isinstance(wait, int | float) and not isinstance(wait, bool) and wait > MAX_WAIT_MS:
            body["wait_ms"] = MAX_WAIT_MS
    return body


@schemathesis.hook
def map_path_parameters(context: Any, path_parameters: Any) -> Any:
    """The served queue in every ``queue`` path parameter."""
    queue = os.environ.get("STREAMDELAY_FUZZ_QUEUE")
    if queue and isinstance(path_parameters, dict) and "queue" in path_parameters:
        path_parameters["queue"] = queue
    return path_parameters


@schemathesis.hook
def map_query(context: Any, query: Any) -> Any:
    """The events route answers at once (``follow=false``): a follow never ends by itself."""
    operation = getattr(context, "operation", None)
    path = getattr(operation, "path", "") or ""
    if path.endswith("/events") and isinstance(query, dict):
        query["follow"] = False
    return query
