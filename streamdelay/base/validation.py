"""Pure validation of every value a caller hands to streamdelay.

Each function returns the normalised value or raises ``ValidationError`` naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from .durations import format_duration
from .errors import ValidationError

QUEUE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
TOPIC = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
JOB_ID = re.compile(r"^[A-Za-z0-9_.:@/+=-]{1,128}$")
# a fairness key (docs/producer.md#fairness-keys), and the id of a job that has one: {key}rest
FAIRNESS_KEY = re.compile(r"^[A-Za-z0-9_.:@/+=-]{1,64}$")
KEYED_JOB_ID = re.compile(r"^\{([A-Za-z0-9_.:@/+=-]{1,64})\}[A-Za-z0-9_.:@/+=-]{1,128}$")
# either form, as the HTTP API's schema states it
ANY_JOB_ID = re.compile(r"^(\{[A-Za-z0-9_.:@/+=-]{1,64}\})?[A-Za-z0-9_.:@/+=-]{1,128}$")
PRIORITY_DEFAULT = 5
GROUP = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
CONSUMER = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")
# the id of a schedule's tick, <schedule name>@<tick epoch ms> (dispatch/schedule_spec.py: NAME,
# tick_id)
TICK_ID = re.compile(r"^[A-Za-z0-9_.:/+=-]{1,100}@[0-9]+$")
MAX_DELAY_SECONDS = 10 * 365 * 86400.0
MAX_TTR_SECONDS = 7 * 86400.0
MAX_ATTEMPTS_LIMIT = 1000
MAX_HEADERS = 32
MAX_HEADER_BYTES = 4096
_TOPICS_SEEN: set[str] = set()  # topics that passed ``topic`` (a few per process; bounded)
_TOPICS_KEPT = 1024


def _pattern(value: object, pattern: re.Pattern[str], field: str, what: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field}: must be a str, not {type(value).__name__}", field=field)
    if not pattern.fullmatch(value):  # not match(): '$' would let a trailing newline through
        raise ValidationError(
            f"{field}: {value[:80]!r} is not a valid {what} (allowed: {pattern.pattern})",
            field=field,
        )
    return value


def queue_name(value: object) -> str:
    """A queue name: 1-64 of letters, digits, ``_ . -``."""
    return _pattern(value, QUEUE_NAME, "name", "queue name")


class NamedTopic:
    """What stands for a topic where one is taken: a typed task (``sd.task``, base/tasks.py)
    resolves to its ``name``, checked when it was made (docs/typed-tasks.md)."""

    __slots__ = ()
    name: str


def topic(value: object) -> str:
    """A topic: 1-128 of letters, digits, ``_ . : -``; a typed task gives its topic."""
    if type(value) is str and value in _TOPICS_SEEN:  # every job of a batch, mostly one topic
        return value
    if isinstance(value, NamedTopic):  # off the path of string topics (cached above)
        return value.name
    checked = _pattern(value, TOPIC, "topic", "topic")
    if type(value) is str and len(_TOPICS_SEEN) < _TOPICS_KEPT:
        _TOPICS_SEEN.add(checked)
    return checked


def job_id(value: object) -> str:
    """A job id: 1-128 of letters, digits, ``_ . : @ / + = -``; or ``{<key>}<rest>``, the id of a
    job with a fairness key (``<key>`` a valid key, ``<rest>`` such 1-128 characters)."""
    if type(value) is str and value.startswith("{"):
        return _pattern(value, KEYED_JOB_ID, "id", "job id ({key}rest)")
    return _pattern(value, JOB_ID, "id", "job id")


def priority(value: object) -> int:
    """A job's priority: an int 0-9 (higher runs first; 5 is the default)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 9:
        shown = repr(value)[:40]
        raise ValidationError(f"priority: must be an int in [0, 9], got {shown}",
                              field="priority")
    return value


def fairness_key(value: object) -> str:
    """A fairness key: 1-64 of letters, digits, ``_ . : @ / + = -``."""
    return _pattern(value, FAIRNESS_KEY, "key", "fairness key")


def expires_ms(value: object) -> int:
    """A job's expiry: a finite number of seconds > 0 and at most 10 years after its due time,
    in whole ms (rounded up, so never earlier than asked)."""
    number = seconds(value, "expires")
    if number <= 0:
        raise ValidationError("expires: must be more than 0 seconds", field="expires")
    return math.ceil(number * 1000)


def keyed_job_id(key: str, value: str | None, fresh: str) -> str:
    """The id of a job with fairness key ``key`` (validated): ``{key}<value>``, or ``value``
    itself when it starts with ``{key}`` already; ``{key}<fresh>`` without an id. An id that
    starts with ``{`` for another key is refused naming ``id``."""
    if value is None:
        return job_id("{" + key + "}" + fresh)
    if type(value) is str and value.startswith("{"):
        checked = job_id(value)
        if not checked.startswith("{" + key + "}"):
            raise ValidationError(f"id: {checked[:80]!r} carries another key than "
                                  f"key={key!r} (a keyed job's id is {{key}}rest)", field="id")
        return checked
    return job_id("{" + key + "}" + job_id(value))


def producer_job_id(value: object) -> str:
    """The id of a job a producer enqueues: a job id not shaped like a schedule's tick
    (``<name>@<digits>``), which only the schedule's own firing may create
    (docs/schedules.md#exactly-once-per-tick): a producer could otherwise take a tick's id
    first and run its own topic and body in the tick's place."""
    checked = job_id(value)
    if checked.startswith("{"):
        raise ValidationError(
            f"id: {checked[:80]!r} has the form {{key}}rest of a keyed job's id; pass key= "
            "as well (or an id without braces)", field="id")
    if "@" in checked and TICK_ID.fullmatch(checked):
        raise ValidationError(
            f"id: {checked[:80]!r} has the shape of a schedule tick's id (<name>@<digits>), "
            "which only a schedule may enqueue; use another id", field="id")
    return checked


def group(value: object) -> str:
    """A consumer group name."""
    return _pattern(value, GROUP, "group", "group name")


def consumer(value: object, field: str = "consumer") -> str:
    """A consumer name (``field``: the argument that carries it, e.g. ``to``)."""
    return _pattern(value, CONSUMER, field, "consumer name")


def seconds(
    value: object, field: str, *, minimum: float = 0.0, maximum: float = MAX_DELAY_SECONDS
) -> float:
    """A finite number of seconds (int, float or ``timedelta``) within [minimum, maximum]."""
    kind = type(value)
    if (kind is float or kind is int) and minimum <= value <= maximum:  # type: ignore[operator]
        return float(value)  # type: ignore[arg-type]  # the common case; NaN, inf, bool and
        # anything else take the checks below
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(
            f"{field}: must be seconds (int, float or timedelta), not {type(value).__name__}",
            field=field,
        )
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        raise ValidationError(f"{field}: too large a number of seconds", field=field) from None
    if not math.isfinite(number):
        raise ValidationError(f"{field}: must be finite, got {number!r}", field=field)
    if number < minimum or number > maximum:
        if field == "at":  # epoch seconds, not a duration
            span = f"{number:.0f} is out of range [{minimum:.0f}, {maximum:.0f}] (epoch seconds)"
        else:
            span = (f"{format_duration(number)} is out of range [{format_duration(minimum)}, "
                    f"{format_duration(maximum)}]")
        raise ValidationError(f"{field}: {span}", field=field)
    return number


def delay_ms(value: object, field: str = "delay") -> int:
    """A relative delay in whole milliseconds (rounded up, so never early)."""
    return math.ceil(seconds(value, field) * 1000)


def at_ms(value: object) -> int:
    """An absolute due time: aware ``datetime`` or epoch seconds, as epoch ms (rounded up)."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValidationError(
                "at: naive datetime; pass an aware datetime (e.g. tzinfo=timezone.utc)", field="at"
            )
        return math.ceil(value.timestamp() * 1000)
    epoch = seconds(value, "at", minimum=0.0, maximum=1e11)
    return math.ceil(epoch * 1000)


def ttr_ms(value: object) -> int:
    """Time-to-run in ms: at least 1 s, at most 7 days."""
    return math.ceil(seconds(value, "ttr", minimum=1.0, maximum=MAX_TTR_SECONDS) * 1000)


def max_attempts(value: object) -> int:
    """How many deliveries a job gets: 1 to 1000."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("max_attempts: must be an int", field="max_attempts")
    if not 1 <= value <= MAX_ATTEMPTS_LIMIT:
        raise ValidationError(
            f"max_attempts: {value} is out of range [1, {MAX_ATTEMPTS_LIMIT}]", field="max_attempts"
        )
    return value


def headers(value: object) -> dict[str, str]:
    """A small str -> str map (at most 32 entries, 4 KiB in all)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError("headers: must be a mapping of str to str", field="headers")
    if len(value) > MAX_HEADERS:
        raise ValidationError(f"headers: more than {MAX_HEADERS} entries", field="headers")
    size = 0
    result: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str) or not key:
            raise ValidationError("headers: keys and values must be str (keys non-empty)",
                                  field="headers")
        try:
            size += len(key.encode()) + len(item.encode())
        except UnicodeEncodeError:  # lone surrogates cannot travel as UTF-8
            raise ValidationError("headers: keys and values must be valid UTF-8 text",
                                  field="headers") from None
        result[key] = item
    if size > MAX_HEADER_BYTES:
        raise ValidationError(f"headers: larger than {MAX_HEADER_BYTES} bytes", field="headers")
    return result


def backoff_schedule(value: object) -> list[float]:
    """An explicit retry schedule: a non-empty list of non-negative seconds."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise ValidationError("backoff: must be a non-empty list of seconds", field="backoff")
    if len(value) > MAX_ATTEMPTS_LIMIT:
        raise ValidationError("backoff: too many steps", field="backoff")
    return [seconds(step, "backoff") for step in value]


def positive_int(value: Any, field: str, maximum: int = 1_000_000) -> int:
    """An int in [1, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ValidationError(f"{field}: must be an int in [1, {maximum}]", field=field)
    return value


def count(value: Any, field: str, maximum: int = 1_000_000) -> int:
    """An int in [0, maximum] (a count that may be zero, e.g. ``replicas``)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise ValidationError(f"{field}: must be an int in [0, {maximum}]", field=field)
    return value


PROGRESS_LIMIT = 1024  # bytes of JSON: a progress value travels with every heartbeat


def progress(value: object) -> bytes:
    """A job's progress (a number or a small JSON value) as JSON, at most ``PROGRESS_LIMIT``
    bytes; refused (field ``progress``) when bigger, not JSON-encodable, or holding NaN or
    Infinity (docs/results.md#progress)."""
    import msgspec  # local: base needs it only here

    try:
        data = msgspec.json.encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:
        raise ValidationError(f"progress: cannot be encoded as JSON: {exc}",
                              field="progress") from None
    if b"null" in data:  # NaN and Infinity are written as null
        finite_json(value, "progress")
    if len(data) > PROGRESS_LIMIT:
        raise ValidationError(f"progress: {len(data)} bytes of JSON is over the limit of "
                              f"{PROGRESS_LIMIT}; report a number or a small object",
                              field="progress")
    return data


def finite_json(value: object, field: str) -> None:
    """Refuse NaN and Infinity anywhere in ``value`` (JSON encoders write them as ``null``,
    so they would not come back as sent), naming ``field``."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValidationError(f"{field}: {item!r} is not valid JSON (JSON has no NaN or "
                                  f"Infinity)", field=field)
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
