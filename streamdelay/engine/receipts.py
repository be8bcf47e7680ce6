"""Reservation receipts (docs/pull.md): everything needed to settle one delivery, in any
process, packed as URL-safe text, and checked when it comes back."""

from __future__ import annotations

import base64
import binascii
import re

import msgspec

from ..base import validation
from ..base.errors import ValidationError

RECEIPT_VERSION = 1
_ENTRY = re.compile(r"^[0-9]{1,20}-[0-9]{1,20}$")  # a stream entry id


class Receipt(msgspec.Struct, array_like=True, frozen=True):
    """Everything needed to settle one delivery, in any process (packed into ``receipt``)."""

    version: int
    queue: str
    partition: int
    topic: str
    id: str
    entry: str
    group: str
    consumer: str
    attempt: int
    due: int
    ttr_ms: int
    retry_ms: int  # the retry delay a failure without retry_delay gets (the job's backoff)


_receipt_encoder = msgspec.msgpack.Encoder()
_receipt_decoder = msgspec.msgpack.Decoder(Receipt)


def encode_receipt(receipt: Receipt) -> str:
    """The receipt as URL-safe text (base64url of MessagePack, no padding)."""
    return base64.urlsafe_b64encode(_receipt_encoder.encode(receipt)).rstrip(b"=").decode()


def decode_receipt(value: object, queue: str, partitions: int) -> Receipt:
    """Parse and check a receipt of ``queue`` (of ``partitions`` partitions); anything else is
    a ``ValidationError`` naming the field ``receipt``."""
    if not isinstance(value, str) or not 0 < len(value) <= 4096:
        raise ValidationError("receipt: must be a non-empty str from a Reservation",
                              field="receipt")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        found = _receipt_decoder.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        raise ValidationError("receipt: not a receipt of a reservation", field="receipt"
                              ) from None
    if found.version != RECEIPT_VERSION:
        raise ValidationError(f"receipt: version {found.version} is not supported",
                              field="receipt")
    if found.queue != queue:
        raise ValidationError(f"receipt: belongs to queue {found.queue!r}, not {queue!r}",
                              field="receipt")
    try:
        validation.topic(found.topic)
        validation.job_id(found.id)
        validation.group(found.group)
        validation.consumer(found.consumer)
        if not (0 <= found.partition < partitions and found.attempt >= 1
                and found.ttr_ms >= 0 and found.retry_ms >= 0 and _ENTRY.match(found.entry)):
            raise ValidationError("out of range")
    except ValidationError:
        raise ValidationError("receipt: not a receipt of a reservation", field="receipt"
                              ) from None
    return found
