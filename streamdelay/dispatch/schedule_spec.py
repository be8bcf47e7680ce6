"""A schedule's definition: validation (each error names its field), the stored record, and the
``Schedule`` a listing returns. Pure: no I/O, no clock.

The record kept in the partition's ``sched`` hash is ``next|last|paused|version|ahead|spec``
(docs/schedules.md#storage): the Lua scripts read and write the five header fields, the spec
(MessagePack) is only read here.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal

import msgspec

from ..base import validation
from ..base.errors import StreamdelayError, ValidationError
from ..protocol.codec import decode_blob, decode_body, encode_blob, encode_body
from ..protocol.keys import PartitionKeys, partition_of
from .schedule_timing import Timing

Missed = Literal["skip", "once", "all"]
MISSED_POLICIES = ("skip", "once", "all")
NAME = re.compile(r"[A-Za-z0-9_.:/+=-]{1,100}")
MIN_EVERY_MS = 1000
MAX_JITTER_S = 3600.0
_RECORD = re.compile(rb"^(-?\d+)\|(-?\d+)\|([01])\|([0-9a-f]*)\|([\d,]*)\|", re.DOTALL)


class StoredSpec(msgspec.Struct, frozen=True, array_like=True):
    """What the record keeps after its header (MessagePack array)."""

    topic: str
    cron: str | None
    every_ms: int | None
    tz: str
    ttr_ms: int
    max_attempts: int
    missed: str
    jitter_ms: int
    blob: bytes


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(StoredSpec)


def schedule_name(value: object) -> str:
    """A schedule name: 1-100 of letters, digits, ``_ . : / + = -`` (no ``@``: tick ids are
    ``name@<epoch ms>``)."""
    if not isinstance(value, str):
        raise ValidationError(f"name: must be a str, not {type(value).__name__}", field="name")
    if not NAME.fullmatch(value):
        raise ValidationError(f"name: {value[:80]!r} is not a valid schedule name (allowed: "
                              f"{NAME.pattern})", field="name")
    return value


def home_keys(queue: str, partitions: int, name: str) -> PartitionKeys:
    """The partition holding schedule ``name`` and all its ticks (docs/keys.md#partitions)."""
    return PartitionKeys(queue, partition_of(f"{name}@0", partitions))


def tick_id(name: str, tick_ms: int) -> str:
    """The job id of one tick: ``name@<tick epoch ms>``."""
    return f"{name}@{tick_ms}"


def _every_ms(every: object) -> int:
    if isinstance(every, timedelta):
        every = every.total_seconds()
    seconds = validation.seconds(every, "every", minimum=MIN_EVERY_MS / 1000)
    ms = round(seconds * 1000)
    return ms


@dataclass(frozen=True)
class ScheduleDef:
    """A validated schedule, ready to be stored."""

    name: str
    spec: StoredSpec

    @property
    def timing(self) -> Timing:
        """The tick evaluator of this spec."""
        return Timing(self.spec.cron, self.spec.every_ms, self.spec.tz)

    @property
    def encoded(self) -> bytes:
        """The spec as stored after the record header."""
        return _encoder.encode(self.spec)

    @property
    def version(self) -> str:
        """A digest of the spec: equal specs have equal versions (idempotent declaring)."""
        return hashlib.sha1(self.encoded).hexdigest()[:16]


def define(
    name: object, topic: object, body: Any, *, cron: object = None, every: object = None,
    tz: object = "UTC", ttr: object, max_attempts: object, missed: object = "skip",
    jitter: object = 0, serializer: Any = "json", max_body_bytes: int = 1 << 20,
) -> ScheduleDef:
    """Validate every argument of ``schedule()`` (the field named in each error)."""
    name = schedule_name(name)
    topic = validation.topic(topic)
    if (cron is None) == (every is None):
        raise ValidationError("cron: give exactly one of cron= and every=", field="cron")
    if not isinstance(tz, str):
        raise ValidationError("tz: must be a time zone name such as 'Europe/Berlin'", field="tz")
    if cron is not None and not isinstance(cron, str):
        raise ValidationError("cron: must be a str such as '0 3 * * *'", field="cron")
    every_ms = None if every is None else _every_ms(every)
    Timing(cron, every_ms, tz)  # checks cron and tz
    if missed not in MISSED_POLICIES:
        raise ValidationError(f"missed: must be one of {', '.join(MISSED_POLICIES)}, "
                              f"not {missed!r}", field="missed")
    jitter_ms = round(validation.seconds(jitter, "jitter", maximum=MAX_JITTER_S) * 1000)
    fmt, data = encode_body(body, serializer, max_body_bytes)
    spec = StoredSpec(topic, cron, every_ms, tz, validation.ttr_ms(ttr),
                      validation.max_attempts(max_attempts), str(missed), jitter_ms,
                      encode_blob(fmt, data, {}, None))
    return ScheduleDef(name, spec)


@dataclass(frozen=True)
class Record:
    """One parsed record of the ``sched`` hash."""

    next_ms: int  # first tick not yet enqueued (-1: none left)
    last_ms: int  # last tick enqueued (0: none yet)
    paused: bool
    version: str
    ahead: tuple[int, ...]  # ticks enqueued that were not yet due at the time
    spec: StoredSpec

    @property
    def definition(self) -> ScheduleDef:
        """Only the spec, for evaluation."""
        return ScheduleDef("", self.spec)


def parse_record(raw: bytes) -> Record:
    """Parse a stored record (``StreamdelayError`` when foreign or damaged)."""
    match = _RECORD.match(raw)
    if not match:
        raise StreamdelayError("schedule record does not parse")
    try:
        spec = _decoder.decode(raw[match.end():])
    except msgspec.DecodeError as exc:
        raise StreamdelayError(f"schedule spec does not parse: {exc}") from exc
    ahead = tuple(int(x) for x in match.group(5).split(b",") if x)
    return Record(int(match.group(1)), int(match.group(2)), match.group(3) == b"1",
                  match.group(4).decode(), ahead, spec)


@dataclass(frozen=True)
class Schedule:
    """A schedule as ``Queue.schedules()`` lists it. ``next_tick`` and ``last_tick`` are epoch ms
    (server clock; ``next_tick`` -1 when the cron never matches again, ``last_tick`` 0 before the
    first tick); ``every`` and ``jitter`` are seconds, ``ttr`` too."""

    name: str
    topic: str
    cron: str | None
    every: float | None
    tz: str
    ttr: float
    max_attempts: int
    missed: str
    jitter: float
    paused: bool
    next_tick: int
    last_tick: int
    body: Any


def schedule_info(name: str, record: Record) -> Schedule:
    """The public view of one record."""
    spec = record.spec
    blob = decode_blob(spec.blob)
    return Schedule(
        name=name, topic=spec.topic, cron=spec.cron,
        every=None if spec.every_ms is None else spec.every_ms / 1000, tz=spec.tz,
        ttr=spec.ttr_ms / 1000, max_attempts=spec.max_attempts, missed=spec.missed,
        jitter=spec.jitter_ms / 1000, paused=record.paused, next_tick=record.next_ms,
        last_tick=record.last_ms, body=decode_body(blob.fmt, blob.body))
