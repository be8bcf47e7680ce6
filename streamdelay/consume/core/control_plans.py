"""Execution control as plans both drivers run (docs/worker.md#abort, #checkpoints, #snooze):
the abort flag of ``cancelJob``, the abort record the workers' pause watch reads, checkpoints
carried by ``touchJobs`` and ``failJob``, and a snooze (``failJob`` without an attempt).

Keys (docs/keys.md#checkpoints): ``PREFIX aborts`` (zset ``<topic>|<entry id>`` -> the abort's
server time, written by ``cancelJob`` with its abort flag, members kept ``ABORT_KEEP_MS``) and
``PREFIX ck`` (hash job id -> checkpoint JSON, written by ``touchJobs``/``failJob``, carried into
the job's next stream entry as field ``c``, removed when the job ends). A queue that never
aborts or checkpoints has neither key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...base import validation
from ...base.control import checkpoint as checked_checkpoint
from ...base.errors import Aborted, StaleReceipt, ValidationError
from ...protocol.deliveries import ERROR_TEXT_LIMIT
from ...protocol.keys import PartitionKeys, partition_of
from ...protocol.plan import Command, EachCall, Plan
from ...protocol.queue_spec import QueueSpec
from ...protocol.replies import FailReply, parse_fail, texts
from ...protocol.scripts import Arg, ScriptCall, script
from . import leasing
from . import settle_plans as settling
from .receipts import Receipt, ReceiptKey, check_receipt_plan
from .settle_plans import checkpoint_args as checkpoint_args  # the keep-alive builds them

ABORT_KEEP_MS = 60_000  # cancelJob keeps an abort this long (the script's ABORT_KEEP_MS)


def aborts_key(keys: PartitionKeys) -> str:
    """The partition's sorted set of aborted deliveries (``<topic>|<entry id>`` -> ms)."""
    return keys.prefix + "aborts"


def checkpoints_key(keys: PartitionKeys) -> str:
    """The partition's hash of checkpoints (job id -> JSON)."""
    return keys.prefix + "ck"


def cancel_call(keys: PartitionKeys, job_id: str, keep_ms: int, abort: bool) -> ScriptCall:
    """``cancelJob``, with its abort flag when ``abort`` (a job in its stream is recorded in
    ``PREFIX aborts`` for the worker that runs it; its event and result say ``aborted``)."""
    args: list[Arg] = [job_id, keep_ms, "1"] if abort else [job_id, keep_ms]
    return script("cancelJob").call(keys.script_keys(), args, durable=True)


def cancel_plan(cfg: QueueSpec, job_id: str, abort: bool) -> Plan[bool]:
    """Cancel one job in any state; with ``abort``, a running job's handler is stopped too
    (``producer.plans.cancel_plan`` plus the abort flag)."""
    keys = PartitionKeys(cfg.name, partition_of(validation.job_id(job_id), cfg.partitions))
    keep_ms = validation.delay_ms(cfg.keep_result, "keep_result")  # docs/results.md
    return bool(int((yield cancel_call(keys, job_id, keep_ms, abort))))


def aborts_read(keys: PartitionKeys, since_ms: int) -> Command:
    """The aborts of the partition recorded at ``since_ms`` or later (the pause watch sends
    one per partition where its worker holds deliveries)."""
    return Command(("ZRANGEBYSCORE", aborts_key(keys), since_ms, "+inf", "WITHSCORES"))


def parse_aborts(reply: Any) -> tuple[list[tuple[str, str]], int]:
    """``(topic, entry id)`` pairs of an ``aborts_read`` reply, and the newest score (0:
    none)."""
    found: list[tuple[str, str]] = []
    newest = 0
    items = texts(reply or [])
    for member, score in zip(items[::2], items[1::2], strict=False):
        topic, _, entry = member.rpartition("|")
        found.append((topic, entry))
        newest = max(newest, int(float(score)))
    return found, newest


def fail_plan(keys: PartitionKeys, group: str, topic: str, job_id: str, entry_id: str,
              delay_ms: int, dead: bool, error: str, keep_result_ms: int, snooze: bool,
              checkpoint: bytes | None, also: Sequence[ScriptCall] = ()) -> Plan[FailReply]:
    """``failJob`` with its control arguments: ``snooze`` (back after ``delay_ms``, no
    attempt spent) and a ``checkpoint`` written for the next delivery; as
    ``settling.fail_plan`` otherwise (outcome 0: the delivery was not current)."""
    call = script("failJob").call(keys.script_keys(), [
        group, topic, job_id, entry_id, delay_ms, "1" if dead else "0",
        error[:ERROR_TEXT_LIMIT], keep_result_ms, "1" if snooze else "0", checkpoint or b""])
    if not also:
        return parse_fail((yield call))
    replies = yield EachCall((call, *also))  # the lease frees: a failure is not raised
    if isinstance(replies[0], BaseException):
        raise replies[0]
    return parse_fail(replies[0])


# --- by receipt (a reservation, in any process) ------------------------------------------

def _frees(queue: str, receipt: Receipt) -> tuple[ScriptCall, ...]:
    if not receipt.lease:
        return ()
    return (leasing.free_call(queue, [(receipt.topic, leasing.member(receipt.partition,
                                                                     receipt.entry))]),)


def aborted_plan(queue: str, receipt: Receipt) -> Plan[bool]:
    """Whether the receipt's delivery was aborted (read only)."""
    keys = PartitionKeys(queue, receipt.partition)
    found = yield Command(("ZSCORE", aborts_key(keys), f"{receipt.topic}|{receipt.entry}"))
    return found is not None


def aborted_error(receipt: Receipt, what: str) -> Aborted:
    """The error of a settle or touch of an aborted delivery."""
    return Aborted(f"receipt: job {receipt.id!r} was aborted (cancel with abort); its {what} "
                   f"changed nothing: stop working on it", field="receipt", job_id=receipt.id,
                   topic=receipt.topic)


def stale_or_aborted(queue: str, receipt: Receipt, stale: StaleReceipt, what: str
                     ) -> Plan[None]:
    """Raise ``Aborted`` when the stale delivery was aborted, else ``stale``."""
    if (yield from aborted_plan(queue, receipt)):
        raise aborted_error(receipt, what) from stale
    raise stale


def touch_checkpoint_plan(queue: str, key: ReceiptKey, receipt: Receipt, progress: Any,
                          checkpoint: Any) -> Plan[None]:
    """Heartbeat a reservation storing a ``checkpoint`` (and ``progress`` when given) in the
    same ``touchJobs`` call; ``StaleReceipt`` (``Aborted`` when it was aborted) when its
    consumer no longer holds it."""
    data = checked_checkpoint(checkpoint)
    value = None if progress is None else validation.progress(progress)
    yield from check_receipt_plan(queue, key, receipt)
    lost = yield from settling.keep_alive_plan(  # the one keep-alive of every driver
        PartitionKeys(queue, receipt.partition), receipt.group, receipt.consumer,
        [settling.Held(receipt.topic, receipt.id, receipt.entry, receipt.ttr_ms, value,
                       receipt.lease, data)])
    if lost:
        yield from stale_or_aborted(queue, receipt, settling.stale(receipt, "touch"), "touch")


def snooze_receipt_plan(queue: str, key: ReceiptKey, receipt: Receipt, error: object,
                        snooze: object, checkpoint: Any = None) -> Plan[str]:
    """Put a reservation's job back for ``snooze`` seconds without spending an attempt
    (``"snoozed"``), keeping ``checkpoint`` when given; ``StaleReceipt`` when it was not
    current."""
    if not isinstance(error, str):
        raise ValidationError("error: must be a str", field="error")
    delay = validation.delay_ms(snooze, "snooze")
    data = None if checkpoint is None else checked_checkpoint(checkpoint)
    yield from check_receipt_plan(queue, key, receipt)
    outcome = yield from fail_plan(PartitionKeys(queue, receipt.partition), receipt.group,
                                   receipt.topic, receipt.id, receipt.entry, delay, False,
                                   error or "snoozed", receipt.keep_ms, True, data,
                                   _frees(queue, receipt))
    if outcome.outcome == 0:
        yield from stale_or_aborted(queue, receipt, settling.stale(receipt, "fail"), "fail")
    return "snoozed"


def touch_receipt_plan(queue: str, key: ReceiptKey, receipt: Receipt, progress: Any = None,
                       checkpoint: Any = None) -> Plan[None]:
    """A reservation's touch (``settling.touch_receipt_plan``, or ``touch_checkpoint_plan``
    with a ``checkpoint``); a delivery that was aborted raises ``Aborted``, not
    ``StaleReceipt`` (the HTTP service answers 409 ``aborted``)."""
    if checkpoint is not None:
        yield from touch_checkpoint_plan(queue, key, receipt, progress, checkpoint)
        return
    try:
        yield from settling.touch_receipt_plan(queue, key, receipt, progress)
    except StaleReceipt as exc:
        yield from stale_or_aborted(queue, receipt, exc, "touch")


def fail_receipt_plan(queue: str, key: ReceiptKey, receipt: Receipt, error: object,
                      retry_delay: object, dead: object, snooze: object = None,
                      checkpoint: Any = None) -> Plan[str]:
    """A reservation's fail: a snooze (``snooze`` seconds, no attempt spent) or
    ``settling.fail_receipt_plan``; ``Aborted`` for an aborted delivery."""
    if snooze is not None or checkpoint is not None:
        if snooze is not None and (retry_delay is not None or dead is True):
            raise ValidationError("snooze: give snooze, or retry_delay/dead, not both",
                                  field="snooze")
        if snooze is None:
            snooze_ms = receipt.retry_ms if retry_delay is None else validation.delay_ms(
                retry_delay, "retry_delay")
            return (yield from _fail_with_checkpoint(queue, key, receipt, error, snooze_ms,
                                                     dead, checkpoint))
        return (yield from snooze_receipt_plan(queue, key, receipt, error, snooze, checkpoint))
    try:
        return (yield from settling.fail_receipt_plan(queue, key, receipt, error, retry_delay,
                                                      dead))
    except StaleReceipt as exc:
        yield from stale_or_aborted(queue, receipt, exc, "fail")
        raise


def _fail_with_checkpoint(queue: str, key: ReceiptKey, receipt: Receipt, error: object,
                          delay_ms: int, dead: object, checkpoint: Any) -> Plan[str]:
    """A failure that keeps a checkpoint for the next attempt."""
    if not isinstance(error, str):
        raise ValidationError("error: must be a str", field="error")
    if not isinstance(dead, bool):
        raise ValidationError("dead: must be a bool", field="dead")
    data = checked_checkpoint(checkpoint)
    yield from check_receipt_plan(queue, key, receipt)
    outcome = yield from fail_plan(PartitionKeys(queue, receipt.partition), receipt.group,
                                   receipt.topic, receipt.id, receipt.entry, delay_ms, dead,
                                   error, receipt.keep_ms, False, data, _frees(queue, receipt))
    if outcome.outcome == 0:
        yield from stale_or_aborted(queue, receipt, settling.stale(receipt, "fail"), "fail")
    return "dead" if outcome.dead else "retried"
