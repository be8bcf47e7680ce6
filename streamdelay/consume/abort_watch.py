"""A worker's side of execution control (docs/worker.md#abort, #checkpoints): the aborts its
pause watch reads (``consume/paused_topics.py``, every 0.5 s, in the round trip it already makes:
no round trip per job), and the checkpoints its handlers keep, written with a ``touchJobs``
call. The plans and keys are ``consume/core/control_plans.py``'s.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..base.errors import StreamdelayError
from ..io.runner import RETRYABLE
from ..protocol.batching import by_partition
from ..protocol.plan import Command
from ..telemetry.job_logs import delivery_fields
from .core.control_plans import aborts_read, parse_aborts
from .core.settle_plans import Held, keep_alive_plan

if TYPE_CHECKING:
    from .delivery import Delivery
    from .upkeep_host import UpkeepHost

log = logging.getLogger("streamdelay.worker")

# worker -> partition -> the newest abort time read there (the next read starts at it)
_SEEN: weakref.WeakKeyDictionary[Any, dict[int, int]] = weakref.WeakKeyDictionary()


def abort_reads(worker: UpkeepHost) -> tuple[list[int], list[Command]]:
    """The partitions where ``worker`` holds deliveries, and one read of the aborts recorded
    there since the last one seen (none: a worker running nothing reads nothing)."""
    parts = sorted({key[0] for key in worker.inflight})
    seen = _SEEN.setdefault(worker, {})
    return parts, [aborts_read(worker.partitions[p], seen.get(p, 0)) for p in parts]


def apply_aborts(worker: UpkeepHost, parts: Sequence[int], replies: Sequence[Any]) -> int:
    """Abort the deliveries the replies of ``abort_reads`` name (``Delivery.abort``); how
    many were aborted."""
    seen = _SEEN.setdefault(worker, {})
    aborted = 0
    for partition, reply in zip(parts, replies, strict=True):
        found, newest = parse_aborts(reply)
        if newest:
            seen[partition] = max(seen.get(partition, 0), newest)
        for topic, entry in found:
            delivery = worker.inflight.get((partition, topic, entry))
            if delivery is None or delivery.aborted:
                continue
            log.info("job %s (%s): aborted (cancel with abort); stopping its handler",
                     delivery.job_id, topic, extra=delivery_fields(
                         worker.config.name, topic, delivery.job_id, delivery.run))
            delivery.abort()
            aborted += 1
    return aborted


async def flush_checkpoints(worker: UpkeepHost, deliveries: Sequence[Delivery] | None = None
                            ) -> None:
    """Write the checkpoints kept since the last write (of ``deliveries``, else of every
    running delivery) with one ``touchJobs`` call per partition (docs/worker.md#checkpoints);
    nothing when none is fresh."""
    fresh = [d for d in (worker.inflight.values() if deliveries is None else deliveries)
             if d.checkpoint_fresh and d.checkpoint is not None and not d.lost]
    for partition, batch in by_partition(fresh, _partition).items():
        sent = [delivery.checkpoint for delivery in batch]
        # the one keep-alive of every driver (consume/core/settle_plans.py): it touches them too
        try:
            await worker.run_plan(keep_alive_plan(
                worker.partitions[partition], worker.group, worker.consumer,
                [Held(d.topic, d.job_id, d.entry_id, d.ttr_ms, checkpoint=data)
                 for d, data in zip(batch, sent, strict=True)]), "checkpoint")
        except StreamdelayError as exc:  # kept: the next tick sends them again
            log.warning("could not write %d checkpoint(s) (%s)", len(batch), exc)
            continue
        for delivery, data in zip(batch, sent, strict=True):
            if delivery.checkpoint is data:  # none kept meanwhile
                delivery.checkpoint_fresh = False


def _partition(delivery: Delivery) -> int:
    return delivery.partition


async def flush_before_release(worker: UpkeepHost, deliveries: Sequence[Delivery]) -> None:
    """At a graceful shutdown, before ``deliveries`` are handed back: write their fresh
    checkpoints (bounded to 5 s; a failure is logged, the hand-back goes on), so the next
    delivery of each job reads its last one (docs/worker.md#checkpoints)."""
    if not any(d.checkpoint_fresh for d in deliveries):
        return
    try:
        await asyncio.wait_for(flush_checkpoints(worker, deliveries), 5.0)
    except (asyncio.TimeoutError, OSError, *RETRYABLE) as exc:
        log.warning("could not write the checkpoints of the jobs handed back (%s)", exc)
