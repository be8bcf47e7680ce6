"""schemathesis hooks for tests/test_web_openapi.py (loaded through SCHEMATHESIS_HOOKS): long
polls are capped at 200 ms so the fuzzing run stays short (the schema allows 30 s)."""

from __future__ import annotations

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
