"""Reservation receipts (docs/pull.md#receipts): everything needed to settle one delivery, in
any process, packed as URL-safe text, signed, and checked when it comes back.

A receipt is signed with an HMAC-SHA256 under the queue's receipt key, a random secret kept in
Redis (partition 0's ``meta`` hash, field ``receipt_key``, created once by ``HSETNX``): a
consumer that edits any field (a retry delay of a thousand years, another job's entry) or makes
one up is refused, and every field is bounded besides (docs/security.md#receipts). Parsing and
the bounds need no I/O (``decode_receipt``); the signature is checked by the settle plans
(``settle_plans.py``), which read the key once per queue object (``ReceiptKey``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass
from secrets import token_hex

import msgspec

from ...base import validation
from ...base.errors import ValidationError
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Command, Commands, Plan

RECEIPT_VERSION = 2  # 1: unsigned (before the receipt key), refused since
KEY_FIELD = "receipt_key"  # in partition 0's meta hash
KEY_REFRESH_S = 60.0  # a reserving process re-reads the key this often (Redis may lose it)
TAG_BYTES = 16  # HMAC-SHA256, truncated: 128 bits
MAX_ATTEMPT = 1 << 31
MAX_DUE_MS = 10**14  # what ``at=`` accepts (1e11 s)
MAX_TTR_MS = int(validation.MAX_TTR_SECONDS * 1000)
MAX_RETRY_MS = int(validation.MAX_DELAY_SECONDS * 1000)  # as Backoff caps a delay
_ENTRY = re.compile(r"^[0-9]{1,20}-[0-9]{1,20}$")  # a stream entry id
_DOMAIN = b"streamdelay-receipt\0"


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
    tag: bytes = b""  # HMAC of the fields above (and keep_ms) under the queue's receipt key
    keep_ms: int = 0  # the job's keep_result (docs/results.md); after the tag: older receipts
    # the delivery holds a lease in partition 0's slot (a limited topic on a partition other
    # than 0: docs/limits.md#more-than-one-partition): its settle frees it. Not signed: it only
    # says whether to send that free, of the lease named by the signed partition and entry
    lease: bool = False
    # the job's own keep_done ms (None: the queue's; docs/producer.md#keep_done); signed when
    # set, so a receipt without it signs as before
    done_ms: int | None = None


_receipt_encoder = msgspec.msgpack.Encoder()
_receipt_decoder = msgspec.msgpack.Decoder(Receipt)


def _tag(key: bytes, receipt: Receipt) -> bytes:
    """The HMAC of every field but the tag, as this process encodes them (so two encodings of
    one value cannot differ)."""
    values = msgspec.structs.astuple(receipt)[:12]  # up to retry_ms
    # every field but the tag (and lease); keep_ms and done_ms only when set, so a receipt
    # without them signs as before (done_ms as a pair: it cannot pass for a keep_ms)
    fields = values + ((receipt.keep_ms,) if receipt.keep_ms else ()) + (
        (("done", receipt.done_ms),) if receipt.done_ms is not None else ())
    content = _DOMAIN + _receipt_encoder.encode(fields)
    return hmac.digest(key, content, hashlib.sha256)[:TAG_BYTES]


def signed(receipt: Receipt, key: bytes) -> Receipt:
    """``receipt`` with its tag under ``key``."""
    return msgspec.structs.replace(receipt, tag=_tag(key, receipt))


def is_genuine(receipt: Receipt, key: bytes) -> bool:
    """True when ``receipt``'s tag is the one ``key`` gives (constant-time comparison)."""
    return hmac.compare_digest(receipt.tag, _tag(key, receipt))


def bounded(receipt: Receipt) -> Receipt:
    """``receipt`` with attempt, due, ttr and retry delay clamped into the bounds
    ``decode_receipt`` checks (a reserve never issues a receipt it would refuse, whatever a
    foreign record held)."""
    return msgspec.structs.replace(
        receipt, attempt=min(max(receipt.attempt, 1), MAX_ATTEMPT),
        due=min(max(receipt.due, 0), MAX_DUE_MS), ttr_ms=min(max(receipt.ttr_ms, 0), MAX_TTR_MS),
        retry_ms=min(max(receipt.retry_ms, 0), MAX_RETRY_MS),
        keep_ms=min(max(receipt.keep_ms, 0), MAX_DUE_MS),
        done_ms=None if receipt.done_ms is None else min(max(receipt.done_ms, 0), MAX_DUE_MS))


def encode_receipt(receipt: Receipt) -> str:
    """The receipt as URL-safe text (base64url of MessagePack, no padding)."""
    return base64.urlsafe_b64encode(_receipt_encoder.encode(receipt)).rstrip(b"=").decode()


def _invalid(why: str = "not a receipt of a reservation") -> ValidationError:
    return ValidationError(f"receipt: {why}", field="receipt")


def _in_bounds(found: Receipt, partitions: int) -> bool:
    return (0 <= found.partition < partitions and 1 <= found.attempt <= MAX_ATTEMPT
            and 0 <= found.due <= MAX_DUE_MS and 0 <= found.ttr_ms <= MAX_TTR_MS
            and 0 <= found.retry_ms <= MAX_RETRY_MS and len(found.tag) == TAG_BYTES
            and 0 <= found.keep_ms <= MAX_DUE_MS
            and (found.done_ms is None or 0 <= found.done_ms <= MAX_DUE_MS)
            and _ENTRY.match(found.entry) is not None)


def decode_receipt(value: object, queue: str, partitions: int) -> Receipt:
    """Parse and check a receipt of ``queue`` (of ``partitions`` partitions): its form, its
    version and every field's bounds, without I/O (the signature is checked when it settles,
    ``check_receipt_plan``). Anything else is a ``ValidationError`` naming the field
    ``receipt``."""
    if not isinstance(value, str) or not 0 < len(value) <= 4096:
        raise _invalid("must be a non-empty str from a Reservation")
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        found = _receipt_decoder.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        raise _invalid() from None
    if found.version == 1:
        raise _invalid("an unsigned receipt of an earlier release (version 1) is no longer "
                       "accepted; its delivery comes back after its ttr (docs/pull.md#receipts)")
    if found.version != RECEIPT_VERSION:
        raise _invalid(f"version {found.version} is not supported")
    if found.queue != queue:
        raise _invalid(f"belongs to queue {found.queue!r}, not {queue!r}")
    try:
        validation.topic(found.topic)
        validation.job_id(found.id)
        validation.group(found.group)
        validation.consumer(found.consumer)
    except ValidationError:
        raise _invalid() from None
    if not _in_bounds(found, partitions):
        raise _invalid()
    return found


@dataclass
class ReceiptKey:
    """The queue's receipt key as this queue object last read it (None: not yet), and when
    (monotonic seconds)."""

    value: bytes | None = None
    read_at: float = 0.0


def _meta(queue: str) -> str:
    return PartitionKeys(queue, 0).meta


def signing_key_plan(queue: str, holder: ReceiptKey, now: float) -> Plan[bytes]:
    """The key to sign receipts with: the one read less than ``KEY_REFRESH_S`` ago, else the
    queue's key read again, created first when there is none (``HSETNX`` then ``HGET`` in one
    round trip: concurrent creators agree on the first one written)."""
    if holder.value is not None and now - holder.read_at < KEY_REFRESH_S:
        return holder.value
    _, found = yield Commands((Command(("HSETNX", _meta(queue), KEY_FIELD, token_hex(32))),
                               Command(("HGET", _meta(queue), KEY_FIELD))))
    holder.value = found if isinstance(found, bytes) else str(found).encode()
    holder.read_at = now
    return holder.value


def check_receipt_plan(queue: str, holder: ReceiptKey, receipt: Receipt) -> Plan[None]:
    """Refuse (``ValidationError``, field ``receipt``) a receipt not signed with the queue's
    key. The key known to this queue object is tried first; on a mismatch (or none known) it
    is read again once (``HGET``: a check never creates one), since Redis may have lost it and
    another process made a new one."""
    if holder.value is not None and is_genuine(receipt, holder.value):
        return
    found = yield Command(("HGET", _meta(queue), KEY_FIELD))
    if found is not None:
        key = found if isinstance(found, bytes) else str(found).encode()
        if holder.value != key:
            holder.value = key
            holder.read_at = 0.0  # a signer reads it again too
        if is_genuine(receipt, key):
            return
    raise ValidationError(
        f"receipt: not signed by queue {queue!r} (edited, made up, or issued before Redis lost "
        f"the queue's receipt key); nothing was changed", field="receipt", job_id=receipt.id,
        topic=receipt.topic)
