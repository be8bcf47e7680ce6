"""Settling a delivery in Redis: a failure is retried or dead-lettered by one ``failJob`` call,
counted and logged; handled deliveries are acknowledged in ``ackJobs`` batches (``acks.py``
keeps them until written). See docs/worker.md#retries-and-backoff and #acknowledgements.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..base import validation
from ..io.runner import RETRYABLE
from ..protocol.scripts import ScriptCall
from ..telemetry.job_logs import delivery_fields, log_settled
from .core import control_plans as control
from .core.consumer_core import backs, hand_back_plan
from .core.leasing import free_call, triples_pairs
from .core.settle_plans import EXPIRED_NOW, HANDED_BACK, ack_plan, expire_plan, fail_plan
from .core.taking import Entry
from .delivery import Delivery, Settlement
from .upkeep_host import ReadingHost, UpkeepHost

log = logging.getLogger("streamdelay.worker")


def job_fields(worker: UpkeepHost, delivery: Delivery) -> dict[str, Any]:
    """The log fields of a delivery's job (docs/operations.md#logs)."""
    return delivery_fields(worker.config.name, delivery.topic, delivery.job_id, delivery.run)


async def settle_failure(worker: UpkeepHost, delivery: Delivery, settlement: Settlement) -> None:
    """Retry ``delivery`` after its delay or dead-letter it, as ``settlement`` says."""
    keys = worker.partitions[delivery.partition]
    also = frees(worker, delivery.partition, [(delivery.topic, delivery.entry_id)])
    if settlement.kind == "snooze" or delivery.checkpoint_fresh:  # docs/worker.md#snooze
        outcome = await worker.run_plan(control.fail_plan(
            keys, worker.group, delivery.topic, delivery.job_id, delivery.entry_id,
            settlement.delay_ms, settlement.kind == "dead", settlement.error,
            delivery.keep_result_ms, settlement.kind == "snooze",
            delivery.checkpoint if delivery.checkpoint_fresh else None, also), "fail")
    else:
        outcome = await worker.run_plan(fail_plan(
            keys, worker.group, delivery.topic, delivery.job_id, delivery.entry_id,
            settlement.delay_ms, settlement.kind == "dead", settlement.error,
            delivery.keep_result_ms, also), "fail")
    settled = ("dropped", "retried", "dead")[outcome.outcome]
    worker.reports.settled(delivery.topic, worker.group, settled, job_id=delivery.job_id)
    if worker.metrics is not None:
        worker.metrics.timed(delivery, settled)
    if outcome.outcome == 0 and settlement.kind == "dead":  # an entry no job stands behind
        log.warning("dropped stream entry %s of topic %s (no current job %r): %s",
                    delivery.entry_id, delivery.topic, delivery.job_id, settlement.error,
                    extra=job_fields(worker, delivery))
    if outcome.retried:
        worker.counts.add("retried")
        log_settled(delivery.run, "retried", settlement.error)
    elif outcome.dead:
        worker.counts.add("dead")
        log.warning("job %s (%s) is dead: %s", delivery.job_id, delivery.topic,
                    settlement.error.splitlines()[0] if settlement.error else "",
                    extra=job_fields(worker, delivery))


async def settle_expired(worker: UpkeepHost, delivery: Delivery) -> None:
    """Dead-letter ``delivery`` without running it: its job's deadline passed while it waited
    in its stream (``expireJobs``, error ``expired``, not an attempt: docs/expiry.md)."""
    keys = worker.partitions[delivery.partition]
    outcome = (await worker.run_plan(expire_plan(
        keys, worker.group, [delivery.topic, delivery.job_id, delivery.entry_id],
        frees(worker, delivery.partition, [(delivery.topic, delivery.entry_id)])),
        "expire"))[0]
    if outcome == EXPIRED_NOW:
        worker.reports.settled(delivery.topic, worker.group, "expired", job_id=delivery.job_id)
        worker.counts.add("expired")
        log.info("job %s (%s) expired: its deadline passed before it ran", delivery.job_id,
                 delivery.topic, extra=job_fields(worker, delivery))
    elif outcome == HANDED_BACK:
        worker.counts.add("released")


async def send_acks(worker: UpkeepHost, partition: int, flat: list[str],
                    results: list[Any] | None = None, reads: list[int] | None = None,
                    keep_done_ms: int | None = None) -> None:
    """One ``ackJobs`` call for a batch of ``topic, job id, entry id`` of one partition, with
    the results it keeps and the deliveries' fresh read times (``acks.PendingAcks.flush``);
    ``keep_done_ms``: the batch's jobs' own keep_done (None: the queue's)."""
    keys = worker.partitions[partition]
    keep_ms = (validation.delay_ms(worker.config.keep_done) if keep_done_ms is None
               else keep_done_ms)
    pairs = triples_pairs(flat)
    also = frees(worker, partition, pairs, keep=True)  # a failed batch is sent again
    await worker.run_plan(ack_plan(keys, worker.group, keep_ms, flat, results or (), also,
                                   reads or ()), "ack")
    if also:
        worker.leases.forget(partition, pairs)


def frees(worker: UpkeepHost, partition: int, pairs: list[tuple[str, str]],
          keep: bool = False) -> tuple[ScriptCall, ...]:
    """The ``freeLeases`` call (partition 0's slot) of those of ``pairs`` (topic, entry id)
    that hold a lease there, sent with their settle; none when none does. They are forgotten
    here unless ``keep``."""
    if not len(worker.leases):
        return ()
    found = worker.leases.pop(partition, pairs, keep)
    return (free_call(worker.config.name, found),) if found else ()


def hand_back(worker: ReadingHost, entries: Sequence[Entry]) -> None:
    """Give back ``entries`` the core's ``sort`` sent back (their topic was paused, limited or
    staged since the read, or paused since the take), not an attempt: the core's one hand-back
    (``consume/core/consumer_core.py``), a lease freed with it, in one background task the
    worker owns (awaited at shutdown). The core's sort never sends back an entry that is not a
    job's: the worker opens it, and it is dropped at once with its reason."""
    if not entries:
        return
    rows, _ = backs(entry._replace(leased=bool(worker.leases.pop(
        entry.partition, [(entry.topic, entry.entry_id)]))) for entry in entries)
    if rows:
        worker.spawn(_hand_back(worker, rows))


async def _hand_back(worker: ReadingHost, rows: Sequence[Any]) -> None:
    try:
        released = await worker.run_plan(hand_back_plan(worker.config.name, worker.group, rows),
                                         "release")
        worker.counts.add("released", released)
    except (OSError, *RETRYABLE) as exc:
        log.warning("could not hand back %d job(s) of %s (%s); they return after their ttr",
                    len(rows), ", ".join(sorted({row.topic for row in rows})), exc)
