"""Settle and keep alive, as plans both drivers run: acknowledge (``ackJobs``), fail — retry
after a delay or dead (``failJob``) —, touch (``touchJobs``); handing back (``releaseJobs``,
``releaseJobsLater``) is the consumer core's one hand-back (``consumer_core.py``), a receipt's
too. The Worker settles its deliveries in batches per partition; a reservation settles one
receipt (docs/pull.md, docs/worker.md#acknowledgements).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...base import validation
from ...base.errors import StaleReceipt, ValidationError
from ...protocol.deliveries import (
    ERROR_TEXT_LIMIT,
    ack_call,
    expire_call,
    fail_call,
    touch_call,
)
from ...protocol.keys import PartitionKeys
from ...protocol.plan import EachCall, Plan
from ...protocol.queue_spec import QueueSpec
from ...protocol.replies import FailReply, parse_fail, texts
from ...protocol.result_codec import encode_result
from ...protocol.scripts import Arg, ScriptCall
from . import leasing
from .consumer_core import Back, hand_back_outcomes
from .receipts import Receipt, ReceiptKey, check_receipt_plan

Triple = tuple[str, str, str]  # topic, job id, entry id


def _with(call: ScriptCall, also: Sequence[ScriptCall]) -> Plan[Any]:
    """The reply of ``call``, sent together with ``also`` (the lease calls of partition 0's
    slot, consume/core/leasing.py: freed or moved on in the same round trip). A failed ``also`` call
    is not raised: its leases expire with their ttr."""
    if not also:
        return (yield call)
    replies = yield EachCall((call, *also))
    if isinstance(replies[0], BaseException):
        raise replies[0]
    return replies[0]


# --- by delivery (the Worker, and the dead-lettering of a reserve round) -----------------

def ack_plan(keys: PartitionKeys, group: str, keep_done_ms: int, flat: Sequence[str],
             results: Sequence[Arg] = (), also: Sequence[ScriptCall] = (),
             reads: Sequence[int] = ()) -> Plan[int]:
    """Acknowledge ``topic, job id, entry id`` triples of one partition, keeping the results
    given as ``position, keep ms, encoded result`` (docs/results.md); how many were
    current. ``also``: lease calls sent with it (``leasing.free_call``); ``reads``: each
    delivery's fresh read time (``protocol.deliveries.ack_call``)."""
    return int((yield from _with(ack_call(keys, group, keep_done_ms, flat, results, reads),
                                 also)))


def fail_plan(keys: PartitionKeys, group: str, topic: str, job_id: str, entry_id: str,
              delay_ms: int, dead: bool, error: str, keep_result_ms: int = 0,
              also: Sequence[ScriptCall] = ()) -> Plan[FailReply]:
    """Retry one delivery after ``delay_ms`` or dead-letter it (``dead``, or its last
    attempt; its error kept as its result ``keep_result_ms``); outcome 0: the delivery was
    not current."""
    return parse_fail((yield from _with(fail_call(keys, group, topic, job_id, entry_id,
                                                  delay_ms, dead, error[:ERROR_TEXT_LIMIT],
                                                  keep_result_ms), also)))


EXPIRED_NOW, HANDED_BACK, STALE = 2, 1, 0  # expireJobs' outcome per delivery


def expire_plan(keys: PartitionKeys, group: str, flat: Sequence[str],
                also: Sequence[ScriptCall] = ()) -> Plan[list[int]]:
    """Dead-letter ``topic, job id, entry id`` triples of one partition whose job's deadline
    passed before they ran (error ``expired``, not an attempt: docs/expiry.md); one outcome
    per delivery: ``EXPIRED_NOW``, ``HANDED_BACK`` (not expired on the script's clock after
    all), ``STALE``. ``also``: their leases in partition 0's slot, freed with it."""
    return [int(outcome) for outcome in (yield from _with(expire_call(keys, group, flat),
                                                          also))]


def touch_plan(keys: PartitionKeys, group: str, consumer: str, flat: Sequence[str],
               progress: Sequence[Arg] = (), also: Sequence[ScriptCall] = ()) -> Plan[set[str]]:
    """Reset the idle time of ``topic, entry id`` pairs of ``consumer``, storing the progress
    given as ``position, job id, ttl ms, JSON value`` (docs/results.md#progress); the entry
    ids it no longer owns (reclaimed, cancelled, settled)."""
    return set(texts((yield from _with(touch_call(keys, group, consumer, flat, progress),
                                       also))))


@dataclass(frozen=True)
class Held:
    """One delivery a consumer keeps alive: its topic, job and entry, its ttr, the progress it
    reported since its last touch (an encoded JSON value, or None), whether it holds a lease
    in partition 0's slot (``leasing.py``) and a checkpoint to write (JSON, or None)."""

    topic: str
    job_id: str
    entry_id: str
    ttr_ms: int
    progress: Arg | None = None
    lease: bool = False
    checkpoint: bytes | None = None  # kept for the job's next attempt (docs/worker.md#checkpoints)


def progress_ttl_ms(ttr_ms: int) -> int:
    """How long a reported progress value is kept: over two touch intervals of its delivery,
    a second at least (docs/results.md#progress)."""
    return max(ttr_ms, 1000) * 2


def lease_ttl_ms(ttr_ms: int) -> int:
    """How far a touch moves a delivery's lease on: its ttr from now (docs/limits.md)."""
    return max(ttr_ms, 1)


def checkpoint_args(position: int, job_id: str, data: bytes) -> tuple[Arg, ...]:
    """The four ``touchJobs`` values that store a checkpoint of the delivery at ``position``
    (1-based): the position negated, the job id, an unused 0, the JSON."""
    return (-position, job_id, 0, data)


def keep_alive_plan(keys: PartitionKeys, group: str, consumer: str, held: Sequence[Held]
                    ) -> Plan[set[str]]:
    """THE touch of every driver (the Worker's heartbeat, a reservation's ``touch``): reset
    the idle time of ``held`` deliveries of one partition, store their progress
    (``progress_ttl_ms``) and checkpoints and move their leases on (``lease_ttl_ms``), in one
    round trip; the entry ids ``consumer`` no longer owns."""
    flat: list[str] = []
    progress: list[Arg] = []
    leases: list[tuple[str, str, int]] = []
    for position, one in enumerate(held, 1):
        flat.extend((one.topic, one.entry_id))
        if one.progress is not None:
            progress.extend((position, one.job_id, progress_ttl_ms(one.ttr_ms), one.progress))
        if one.checkpoint is not None:
            progress.extend(checkpoint_args(position, one.job_id, one.checkpoint))
        if one.lease:
            leases.append((one.topic, leasing.member(keys.partition, one.entry_id),
                           lease_ttl_ms(one.ttr_ms)))
    also = (leasing.touch_call(keys.queue, leases),) if leases else ()
    return (yield from touch_plan(keys, group, consumer, flat, progress, also))


# --- by receipt (a reservation, in any process) ------------------------------------------

def stale(receipt: Receipt, what: str) -> StaleReceipt:
    """The error of a receipt whose delivery is no longer current."""
    return StaleReceipt(f"receipt: the delivery of job {receipt.id!r} is no longer current "
                        f"({what}: it was reclaimed, cancelled, replaced or settled)",
                        field="receipt", job_id=receipt.id, topic=receipt.topic)


def _keys(queue: str, receipt: Receipt) -> PartitionKeys:
    return PartitionKeys(queue, receipt.partition)


def _frees(queue: str, receipt: Receipt) -> tuple[ScriptCall, ...]:
    """The lease call of a receipt whose delivery holds a lease in slot 0 (a partition other
    than 0 of a limited topic): sent with its settle."""
    if not receipt.lease:
        return ()
    return (leasing.free_call(queue, [(receipt.topic, leasing.member(receipt.partition,
                                                                     receipt.entry))]),)


def ack_receipt_plan(spec: QueueSpec, key: ReceiptKey, receipt: Receipt, result: Any = None
                     ) -> Plan[None]:
    """Acknowledge a reservation, keeping ``result`` when its job keeps one
    (docs/results.md); ``StaleReceipt`` when it was not current, ``ValidationError`` when the
    receipt is not signed by the queue (``key``) or the result is too big (nothing written)."""
    kept: tuple[Arg, ...] = ()
    if receipt.keep_ms:
        kept = (1, receipt.keep_ms, encode_result(result, spec.serializer,
                                                  spec.max_result_bytes))
    yield from check_receipt_plan(spec.name, key, receipt)
    keep_done = (validation.delay_ms(spec.keep_done) if receipt.done_ms is None
                 else receipt.done_ms)  # the job's own over the queue's
    if not (yield from ack_plan(_keys(spec.name, receipt), receipt.group, keep_done,
                                [receipt.topic, receipt.id, receipt.entry], kept,
                                _frees(spec.name, receipt))):
        raise stale(receipt, "ack")


def fail_receipt_plan(queue: str, key: ReceiptKey, receipt: Receipt, error: object,
                      retry_delay: object, dead: object) -> Plan[str]:
    """Fail a reservation: retried after ``retry_delay`` (None: the job's backoff, drawn when
    it was reserved) or dead after its last attempt or with ``dead``. Returns ``"retried"`` or
    ``"dead"``; ``StaleReceipt`` when it was not current."""
    if not isinstance(error, str):
        raise ValidationError("error: must be a str", field="error")
    if not isinstance(dead, bool):
        raise ValidationError("dead: must be a bool", field="dead")
    delay = (receipt.retry_ms if retry_delay is None
             else validation.delay_ms(retry_delay, "retry_delay"))
    yield from check_receipt_plan(queue, key, receipt)
    outcome = yield from fail_plan(_keys(queue, receipt), receipt.group, receipt.topic,
                                   receipt.id, receipt.entry, delay, dead, error,
                                   receipt.keep_ms, _frees(queue, receipt))
    if outcome.outcome == 0:
        raise stale(receipt, "fail")
    return "dead" if outcome.dead else "retried"


def touch_receipt_plan(queue: str, key: ReceiptKey, receipt: Receipt, progress: Any = None
                       ) -> Plan[None]:
    """Heartbeat a reservation (its ttr counts from now), storing ``progress`` when given
    (docs/results.md#progress); ``StaleReceipt`` when its consumer no longer holds it."""
    value = None if progress is None else validation.progress(progress)
    yield from check_receipt_plan(queue, key, receipt)
    if (yield from keep_alive_plan(_keys(queue, receipt), receipt.group, receipt.consumer, [
            Held(receipt.topic, receipt.id, receipt.entry, receipt.ttr_ms, value,
                 receipt.lease)])):
        raise stale(receipt, "touch")


def release_receipts_plan(queue: str, key: ReceiptKey, receipts: Sequence[Receipt]
                          ) -> Plan[int]:
    """Hand reservations back at once, no attempt spent: the core's one hand-back
    (``consumer_core.hand_back_outcomes``: one release per partition and group, their leases
    freed, sent together); how many were still current (a stale one is only acknowledged).
    A receipt not signed by the queue (``key``) is refused before anything is handed back; a
    release refused is raised."""
    for receipt in receipts:
        yield from check_receipt_plan(queue, key, receipt)
    groups: dict[str, list[Back]] = {}
    for r in receipts:
        groups.setdefault(r.group, []).append(Back(r.partition, r.topic, r.id, r.entry,
                                                   r.lease))
    outcomes = yield from hand_back_outcomes(queue, groups)
    released = 0
    for _, outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
        released += outcome
    return released
