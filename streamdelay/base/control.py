"""Execution control a handler asks for (docs/worker.md#checkpoints, #snooze): ``Snooze`` and
the checks of a checkpoint value. Pure: no I/O."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import msgspec

from .errors import ValidationError
from .validation import finite_json, seconds

CHECKPOINT_LIMIT = 64 * 1024  # bytes of JSON one checkpoint may take (docs/keys.md#checkpoints)


class Snooze(Exception):
    """Raise from a handler to put the job back for ``delay`` seconds without spending an
    attempt (docs/worker.md#snooze). A negative or non-number ``delay`` is refused here,
    naming the field ``delay``."""

    def __init__(self, delay: float | timedelta = 0.0) -> None:
        self.delay = seconds(delay, "delay")
        super().__init__(f"snoozed for {self.delay:g}s")


def checkpoint(value: object, field: str = "checkpoint") -> bytes:
    """``value`` as the JSON a checkpoint is stored as (msgspec: dicts, lists, numbers,
    strings, structs, dataclasses, datetimes...), at most ``CHECKPOINT_LIMIT`` bytes; refused,
    naming ``field``, when bigger, not encodable, or holding NaN or Infinity."""
    try:
        data = msgspec.json.encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ValidationError(f"{field}: cannot be encoded (msgspec JSON): {exc}",
                              field=field) from None
    if b"null" in data:  # NaN and Infinity are written as null
        finite_json(value, field)
    if len(data) > CHECKPOINT_LIMIT:
        raise ValidationError(f"{field}: {len(data)} bytes of JSON is over the limit of "
                              f"{CHECKPOINT_LIMIT} (64 KiB); keep a cursor, not the data",
                              field=field)
    return data


def decode_checkpoint(raw: Any) -> Any:
    """A stored checkpoint (JSON bytes) back as a value; None when absent or unreadable (a
    foreign write)."""
    if raw is None:
        return None
    try:
        return msgspec.json.decode(bytes(raw) if not isinstance(raw, str) else raw.encode())
    except msgspec.DecodeError:
        return None
