"""Parsing of human durations such as ``250ms``, ``30s``, ``5m``, ``2h`` and ``1d``."""

from __future__ import annotations

import math
import re

from .errors import ValidationError

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$", re.ASCII)
DURATION_PATTERN = _DURATION.pattern  # the accepted form, for the HTTP schema (docs/http.md)


def parse_duration(text: str, *, field: str = "duration") -> float:
    """Return the number of seconds in ``text`` (a bare number means seconds).

    Raises ``ValidationError`` naming ``field`` for anything else (a negative duration: "must not
    be negative").
    """
    match = _DURATION.match(text) if isinstance(text, str) else None
    if not match and isinstance(text, str) and _DURATION.match(text.strip().removeprefix("-")):
        # a duration with a minus sign: say what is wrong with it, not that it is not one
        raise ValidationError(f"{field}: {text.strip()!r} must not be negative", field=field)
    if not match:
        raise ValidationError(
            f"{field}: {text!r} is not a duration (examples: 250ms, 30s, 5m, 2h, 1d)", field=field
        )
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2) or "s"]
    if not math.isfinite(seconds):
        raise ValidationError(f"{field}: {text!r} is too large", field=field)
    return seconds


def format_duration(seconds: float) -> str:
    """``seconds`` for people, in the largest unit it is a whole number of (``7d``, ``90m``,
    ``250ms``), else in seconds without an exponent (``1.5s``): how errors show durations."""
    for unit in ("d", "h", "m", "s", "ms"):
        count = seconds / _UNIT_SECONDS[unit]
        if count >= 1 and abs(count - round(count)) < 1e-9 * max(count, 1.0):
            return f"{round(count)}{unit}"
    if seconds == 0:
        return "0s"
    return f"{seconds:.6f}".rstrip("0").rstrip(".") + "s"
