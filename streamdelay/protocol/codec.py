"""Encoding of job bodies, the producer blob and the job record (see docs/keys.md).

The record kept in Redis is ``state|attempts|due|created|ttr|max|entry|topic|blob``: a text
header the Lua scripts read and rewrite, then the blob, a MessagePack array written by the
producer and never parsed by Redis.
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

import msgspec

from ..base.errors import BodyDecodeError, BodyEncodeError, StreamdelayError
from ..base.models import Backoff, BackoffPolicy

Serializer = Literal["json", "msgpack"]
FORMAT_JSON, FORMAT_MSGPACK, FORMAT_BYTES = "j", "m", "b"
_FORMATS = frozenset((FORMAT_JSON, FORMAT_MSGPACK, FORMAT_BYTES))
_RAW = (bytes, bytearray, memoryview)  # bodies sent as they are
# Containers nested deeper than this are refused at enqueue: a worker decodes the body with
# Python's recursion limit (1,000 frames, some of them its own), so 990 levels crashed it.
# 128 is also serde_json's default limit, for consumers written in Rust (docs/producer.md).
MAX_BODY_DEPTH = 128


class Blob(msgspec.Struct, array_like=True, omit_defaults=True):
    """The producer's part of a job record: body and options Redis never needs to read."""

    fmt: str
    body: bytes
    headers: dict[str, str] = {}
    schedule: list[float] | None = None
    base: float | None = None
    cap: float | None = None
    jitter: bool | None = None  # None: jitter (the default); False: exact exponential delays
    keep: int | None = None  # keep_result ms (docs/results.md); an older worker ignores it
    # the job's own keep_done ms (None: the worker's queue's; docs/producer.md#keep_done); an
    # older worker ignores it and uses its queue's
    done: int | None = None


_blob_encoder = msgspec.msgpack.Encoder()
_blob_decoder = msgspec.msgpack.Decoder(Blob)
_json_encoder = msgspec.json.Encoder()
_msgpack_encoder = msgspec.msgpack.Encoder()


def too_deep() -> BodyEncodeError:
    """The error of a body nested deeper than ``MAX_BODY_DEPTH`` (also raised by the CLI)."""
    return BodyEncodeError(f"body: nested deeper than {MAX_BODY_DEPTH} levels of lists and maps "
                           f"(a worker could not decode it); flatten it or pass a reference",
                           field="body")


def _path(keys: tuple[Any, ...]) -> str:
    return "body" + "".join(f"[{key!r}]" for key in keys)


def _walk(value: Any, json: bool) -> None:
    """Refuse ``value`` (builtins only) when nested too deep or, for JSON, with NaN/Infinity."""
    if isinstance(value, float) and json and not math.isfinite(value):
        raise _not_json(value, ())
    todo: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while todo:
        container, keys = todo.pop()
        if len(keys) >= MAX_BODY_DEPTH:
            raise too_deep()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if isinstance(item, dict | list):
                todo.append((item, (*keys, key)))
            elif json and isinstance(item, float) and not math.isfinite(item):
                raise _not_json(item, (*keys, key))


def _not_json(value: float, keys: tuple[Any, ...]) -> BodyEncodeError:
    return BodyEncodeError(f"body: {value!r} at {_path(keys)} is not valid JSON (JSON has no NaN "
                           f"or Infinity; use None, a string, or serializer='msgpack')",
                           field="body")


def _check_shape(body: Any, fmt: str, data: bytes) -> None:
    """Refuse an encoded body a worker could not decode (too deep) or that would not come back
    as sent (NaN and Infinity, which JSON encoders write as ``null``).

    Cheap looks at the encoded bytes clear nearly every body (fewer container markers than the
    depth limit, no ``null``); only the others are walked. A JSON container takes at least two
    bytes, so a body of at most twice the depth limit is not even counted (~0.2 µs per job).
    """
    if fmt == FORMAT_JSON:
        if ((len(data) <= 2 * MAX_BODY_DEPTH
             or data.count(b"[") + data.count(b"{") <= MAX_BODY_DEPTH) and b"null" not in data):
            return
    elif len(data.translate(None, _NOT_MSGPACK_CONTAINER)) <= MAX_BODY_DEPTH:
        return
    try:
        plain = msgspec.to_builtins(body)
    except RecursionError:
        raise too_deep() from None
    if isinstance(plain, dict | list | float):
        _walk(plain, fmt == FORMAT_JSON)


# Every byte that can start a MessagePack array or map (fix, 16 and 32 bit forms): a body has at
# most as many containers as such bytes, so fewer than the depth limit cannot be too deep.
_NOT_MSGPACK_CONTAINER = bytes(b for b in range(256)
                               if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))


def encode_body(body: Any, serializer: Serializer, limit: int) -> tuple[str, bytes]:
    """Encode a body: raw ``bytes`` as they are, anything else with the queue's serializer.

    Refused (``BodyEncodeError``, field ``body``): what the serializer cannot encode, more than
    ``limit`` bytes, lists and maps nested deeper than ``MAX_BODY_DEPTH``, and NaN or Infinity
    in a JSON body.
    """
    if isinstance(body, _RAW):  # a tuple: ``bytes | bytearray | ...`` builds a union per call
        fmt, data = FORMAT_BYTES, bytes(body)
    else:
        try:
            if serializer == "msgpack":
                fmt, data = FORMAT_MSGPACK, _msgpack_encoder.encode(body)
            else:
                fmt, data = FORMAT_JSON, _json_encoder.encode(body)
        except RecursionError:  # nested deeper than the encoder allows, or contains itself
            raise too_deep() from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise BodyEncodeError(f"body: cannot be encoded as {serializer}: {exc}",
                                  field="body") from exc
        _check_shape(body, fmt, data)
    if len(data) > limit:
        raise BodyEncodeError(f"body: {len(data)} bytes is over the limit of {limit}",
                              field="body")
    return fmt, data


def decode_body(fmt: str, data: bytes, body_type: Any = None) -> Any:
    """Decode a body; with ``body_type`` (e.g. a msgspec Struct) the value is validated too."""
    try:
        if fmt == FORMAT_BYTES:
            if body_type not in (None, bytes, Any):
                raise BodyDecodeError(f"body: raw bytes cannot be decoded as {body_type!r}")
            return data
        kind = Any if body_type is None else body_type
        if fmt == FORMAT_JSON:
            return msgspec.json.decode(data, type=kind)
        if fmt == FORMAT_MSGPACK:
            return msgspec.msgpack.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BodyDecodeError(f"body: {exc}") from exc
    raise BodyDecodeError(f"body: unknown body format {fmt!r}")


def _bare_blob(fmt: str, body: bytes) -> bytes:
    """``[fmt, body]`` in MessagePack, as ``_blob_encoder`` writes it (a fixarray of 2, a
    one-character fixstr, then bin 8, 16 or 32), without building the list (~3x faster)."""
    n = len(body)
    if n < 0x100:
        head = b"\xc4" + n.to_bytes(1, "big")
    elif n < 0x10000:
        head = b"\xc5" + n.to_bytes(2, "big")
    else:
        head = b"\xc6" + n.to_bytes(4, "big")
    return b"".join((b"\x92\xa1", fmt.encode(), head, body))


def encode_blob(
    fmt: str, body: bytes, headers: dict[str, str], backoff: BackoffPolicy | None,
    keep_ms: int = 0, done_ms: int | None = None,
) -> bytes:
    """Pack the producer blob; ``keep_ms`` is the job's keep_result (0: not kept),
    ``done_ms`` its own keep_done (None: the worker's queue's)."""
    if (not headers and backoff is None and not keep_ms and done_ms is None
            and fmt in _FORMATS):  # the common case, by hand
        return _bare_blob(fmt, body)
    values: list[Any] = [fmt, body, headers, None, None, None, None, keep_ms or None, done_ms]
    if isinstance(backoff, Backoff):
        values[4], values[5] = backoff.base, backoff.cap
        values[6] = None if backoff.jitter else False
    elif backoff is not None:
        values[3] = [float(step) for step in backoff]
    while len(values) > 2 and values[-1] in (None, {}):
        values.pop()  # trailing defaults cost Redis memory on every delayed job
    return _blob_encoder.encode(values)


def decode_blob(data: bytes) -> Blob:
    """Unpack the producer blob."""
    try:
        return _blob_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BodyDecodeError(f"envelope: malformed job blob: {exc}") from exc


def blob_backoff(blob: Blob) -> BackoffPolicy | None:
    """The per-job backoff stored in a blob, if any."""
    if blob.schedule is not None:
        return list(blob.schedule)
    if blob.base is not None:
        return Backoff(base=blob.base, cap=blob.cap if blob.cap is not None else 3600.0,
                       jitter=blob.jitter is not False)
    return None


class Record(NamedTuple):
    """A parsed job record (header fields and the still-packed blob); a named tuple, as one is
    built per delivery on the worker's hot path."""

    state: str
    attempts: int
    due: int
    created: int
    ttr_ms: int
    max_attempts: int
    entry: str
    topic: str
    blob: bytes


def parse_record(raw: bytes) -> Record:
    """Parse a record as written by the scripts; raises ``StreamdelayError`` when malformed."""
    parts = raw.split(b"|", 8)
    if len(parts) != 9 or parts[0] not in (b"d", b"s", b"x", b"c", b"r", b"w"):
        raise StreamdelayError("envelope: malformed job record")
    try:
        return Record(
            state=parts[0].decode(),
            attempts=int(parts[1]),
            due=int(parts[2]),
            created=int(parts[3]),
            ttr_ms=int(parts[4]),
            max_attempts=int(parts[5]),
            entry=parts[6].decode(),
            topic=parts[7].decode(),
            blob=parts[8],
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise StreamdelayError(f"envelope: malformed job record: {exc}") from exc
