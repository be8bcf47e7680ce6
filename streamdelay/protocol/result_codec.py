"""Job results, I/O-free: encoding a handler's return value for the settle scripts, reading a
kept result back, and the plan of one wait for it (docs/results.md).

The settle scripts (``ackJobs``, ``failJob``, ``cancelJob``) write a result under
``PREFIX r:<id>`` for the job's ``keep_result`` and push the same text to ``PREFIX w:<id>``, a
short-lived one-element list its waiters block on (``BLMOVE`` from the list to itself, so one
push wakes them all): ``lua/includes/keep_result.lua``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..base import validation
from ..base.errors import ValidationError
from ..base.models import JobResult
from .codec import FORMAT_JSON, FORMAT_MSGPACK, Serializer, decode_body
from .keys import PartitionKeys
from .plan import Command, Commands, Plan

DEFAULT_MAX_RESULT_BYTES = 64 << 10
WAKE_MS = 5000  # how long a wake list lives (lua/includes/keep_result.lua's WAKE_MS)
_STATES = {b"s": "succeeded", b"x": "dead", b"c": "cancelled"}
_json = msgspec.json.Encoder()
_msgpack = msgspec.msgpack.Encoder()
PENDING = object()  # a wait step's answer while the job has not ended


class ResultTooLarge(ValidationError):
    """A handler returned a value over ``max_result_bytes`` once encoded (the job fails)."""


def result_key(keys: PartitionKeys, job_id: str) -> str:
    """String: the kept result of job ``job_id`` (``state|finished_ms|payload``)."""
    return f"{keys.prefix}r:{job_id}"


def wake_key(keys: PartitionKeys, job_id: str) -> str:
    """List: the result again, for a few seconds after the end, that waiters block on."""
    return f"{keys.prefix}w:{job_id}"


def encode_result(value: Any, serializer: Serializer, limit: int) -> bytes:
    """A handler's return value as the settle scripts store it: a format letter, then the value
    in the queue's serializer. Refused (``ResultTooLarge``, field ``result``) beyond ``limit``
    bytes, and (``ValidationError``) when it cannot be encoded or holds NaN/Infinity in JSON."""
    try:
        if serializer == "msgpack":
            fmt, data = FORMAT_MSGPACK, _msgpack.encode(value)
        else:
            fmt, data = FORMAT_JSON, _json.encode(value)
            if b"null" in data:  # NaN and Infinity are written as null: refuse them
                validation.finite_json(value, "result")
    except RecursionError:
        raise ValidationError("result: nested too deeply to encode", field="result") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValidationError(f"result: cannot be encoded as {serializer}: {exc}",
                              field="result") from exc
    if len(data) > limit:
        raise ResultTooLarge(f"result: {len(data)} bytes encoded is over max_result_bytes="
                             f"{limit}; return less, or store it elsewhere and return a "
                             f"reference", field="result")
    return fmt.encode() + data


def parse_result(job_id: str, raw: bytes | str) -> JobResult:
    """A result as a settle script stored it (``state|finished_ms|payload``)."""
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    state, finished, payload = data.split(b"|", 2)
    kind = _STATES.get(state)
    if kind is None:
        raise ValidationError(f"result of {job_id!r}: unknown state {state!r}", field="result")
    if kind == "succeeded":
        value = decode_body(payload[:1].decode(), payload[1:]) if payload else None
        return JobResult(job_id, "succeeded", value, None, int(finished))
    error = payload.decode(errors="replace") or ("cancelled" if kind == "cancelled" else "")
    return JobResult(job_id, kind, None, error, int(finished))  # type: ignore[arg-type]


def result_timeout(timeout: object) -> float | None:
    """A wait's ``timeout`` in seconds (None: do not wait), refused when negative, not a number
    or over a day (field ``timeout``)."""
    if timeout is None:
        return None
    return validation.seconds(timeout, "timeout", maximum=86_400)


def wait_step_plan(keys: PartitionKeys, job_id: str, block_s: float) -> Plan[Any]:
    """One arming of a wait: read the kept result and whether the job exists (one round trip);
    then, when it is still running and ``block_s`` > 0, block until its settle script pushes
    the result (``BLMOVE`` of the wake list onto itself, at most ``block_s``). Returns a
    ``JobResult``, None for an unknown job, or ``PENDING``."""
    found, known = yield Commands((Command(("GET", result_key(keys, job_id))),
                                   Command(("HEXISTS", keys.jobs, job_id))))
    if found is not None:
        return parse_result(job_id, found)
    if not int(known):
        return None
    if block_s <= 0:
        return PENDING
    wk = wake_key(keys, job_id)
    woke = yield Command(("BLMOVE", wk, wk, "LEFT", "LEFT", round(max(block_s, 0.001), 3)))
    return PENDING if woke is None else parse_result(job_id, woke)


def progress_key(keys: PartitionKeys, job_id: str) -> str:
    """String: ``entry id|JSON`` of the last progress of job ``job_id``'s running delivery,
    written by ``touchJobs`` (docs/results.md#progress)."""
    return f"{keys.prefix}p:{job_id}"


def parse_progress(raw: bytes | str | None, entry: str) -> Any:
    """The progress value stored for the delivery ``entry`` (None: none, or one of an earlier
    delivery of the job)."""
    if raw is None:
        return None
    data = raw.encode() if isinstance(raw, str) else bytes(raw)
    owner, _, value = data.partition(b"|")
    if owner.decode(errors="replace") != entry:
        return None
    try:
        return msgspec.json.decode(value)
    except msgspec.DecodeError:
        return None
