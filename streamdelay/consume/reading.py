"""The worker's reading: one read loop per partition, and what sits in this worker's own
pending list but is not running here.

The read loop asks for as many new entries as the worker has free slots, from every topic at
once, on its own connection (socket timeout above the block time). With fewer free slots than
topics it first waits up to ``SUBSET_WAIT`` for a slot to free; still short (long handlers hold
the slots), it reads the topics in turns without blocking: a read blocking on idle topics would
leave a backlog in another one waiting a whole block time with a slot free.

Entries land in a consumer's pending list without the worker holding them when an operator
hands jobs over (``claim --to``) or when a read was cancelled or timed out after Redis had
delivered it. The read loop of each partition looks every ``reclaim_interval`` (between two
reads, so no read of its own is in flight) and starts such entries as free slots allow. Entries
already there when the worker started belonged to an earlier process of the same name; they are
left for the reclaim after their ttr, which counts the attempt (a job that kills its worker
must not run again for free at every restart). See docs/worker.md#handed-over-jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from ..base.errors import GroupNotFound
from ..io.clients import AsyncClient, async_client
from ..io.loop_supervision import pause_after_failure
from ..io.runner import RETRYABLE, drive_once_async
from ..protocol.keys import PartitionKeys
from . import settle_calls as settling
from . import upkeep_loops as upkeep
from .core.constants import REFRESH_S
from .core.pending import entries_plan, own_pending_plan
from .core.taking import Entry, has_deadline, read_plan, streams_of
from .delivery import Delivery
from .upkeep_host import ReadingHost

log = logging.getLogger("streamdelay.worker")
MAX_LOOK = 10_000  # pending rows read per topic and look
SUBSET_WAIT = 0.05  # seconds to wait for a slot per topic before reading only some topics


def _start_found(worker: ReadingHost, deliveries: list[Delivery], found: list[Entry]) -> int:
    """Start the orphans still ours and not held; those the core's ``sort`` sends back (paused,
    limited or staged: as for a plain read, only the take starts those, docs/limits.md,
    docs/priorities.md) are handed back instead."""
    held = worker.acks.entries(deliveries[0].partition) if deliveries else set()
    mine = {id(entry): delivery for delivery, entry in zip(deliveries, found, strict=True)
            if not (delivery.lost or (delivery.topic, delivery.entry_id) in held
                    or delivery.key in worker.inflight)}  # or started meanwhile (by a take)
    run, back = worker.core.sort([entry for entry in found if id(entry) in mine])
    settling.hand_back(worker, back)
    return sum(worker.start(mine[id(entry)], entry.fields) for entry in run)


@dataclass
class OwnPending:
    """What one read loop knows of its partition's own pending list: the entries an earlier
    process of this consumer name left (None until the first look)."""

    inherited: set[tuple[str, str]] | None = None


async def start_orphans(worker: ReadingHost, keys: PartitionKeys, client: AsyncClient,
                        own: OwnPending) -> int:
    """Start own pending entries of ``keys``' partition that this worker does not hold."""
    free = worker.free_slots()
    if free <= 0:
        return 0
    part = keys.partition
    # Held before the look: a delivery settled while it looks (its ack then written) must not
    # count as an orphan. New deliveries of this partition start only in this loop.
    held = worker.acks.entries(part) | {(t, e) for p, t, e in worker.inflight if p == part}
    inherited = own.inherited
    count = MAX_LOOK if inherited is None else min(MAX_LOOK, len(held) + free)
    rows, more = await drive_once_async(client, own_pending_plan(
        keys, worker.group, worker.consumer, worker.topics, count))
    held |= worker.acks.entries(part)
    orphans = [(topic, eid) for topic, eid in rows
               if (topic, eid) not in held and (part, topic, eid) not in worker.inflight]
    if inherited is None:  # the first look: an earlier process of this name left these
        own.inherited = set(orphans)
        if orphans:
            log.warning("%d job(s) were pending for consumer %s before this worker started; "
                        "they are re-queued after their ttr", len(orphans), worker.consumer)
        return 0
    if not more:  # forget the ones reclaimed meanwhile
        inherited.intersection_update(rows)
    chosen = [entry for entry in orphans if entry not in inherited][:free]
    if not chosen:
        return 0
    found = await drive_once_async(client, entries_plan(keys, chosen))
    deliveries = [Delivery(part, entry.topic, entry.entry_id, read_ms=entry.now_ms)
                  for entry in found]
    if deliveries:  # still ours (not cancelled, rescheduled, reclaimed)? and a fresh idle time
        await upkeep.touch(worker, deliveries, quiet=True)
    started = _start_found(worker, deliveries, found)
    if started:
        log.info("started %d job(s) found in consumer %s's own pending list", started,
                 worker.consumer)
    return started


async def _free_slots_for(worker: ReadingHost, topics: int) -> int:
    """The free slots, once there is one per topic or ``SUBSET_WAIT`` passed without a slot
    freed (then fewer: long handlers hold the others)."""
    free = worker.free_slots()
    if free < topics:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(worker.slot_freed(), SUBSET_WAIT)
        free = worker.free_slots()
    return free


async def read_loop(worker: ReadingHost, keys: PartitionKeys) -> None:
    """Read new entries of one partition for free slots and start them, until the worker stops;
    every ``reclaim_interval``, between two reads, start orphans of the own pending list."""
    blocking = async_client(worker.config.url, worker.block + worker.config.socket_timeout)
    topics = sorted(worker.topics)
    turn = 0
    failures = 0
    next_look = 0.0
    own = OwnPending()
    deadlines = False  # TIME rides along with each read once a job with a deadline came (and
    # while the queue keeps events: the read time dates each job's started, events.md#started)
    try:
        while not worker.stopping:
            if worker.free_slots() <= 0:
                await worker.slot_freed()
                continue
            if time.monotonic() >= next_look:  # between reads: no read of ours in flight
                next_look = time.monotonic() + worker.reclaim_interval
                try:
                    await start_orphans(worker, keys, blocking, own)
                except RETRYABLE as exc:
                    log.warning("could not look at the own pending list (%s)", exc)
                if worker.free_slots() <= 0:
                    continue
            active = worker.views.plain(topics)
            if not active:  # every topic paused or limited (limiting.py takes those): look
                # again when the paused set may change
                await asyncio.sleep(REFRESH_S)
                continue
            free = await _free_slots_for(worker, len(active))
            if free <= 0:  # other loops (partitions, takes) took the slots while it waited
                continue
            chosen = [active[(turn + i) % len(active)] for i in range(min(free, len(active)))]
            turn += 1
            # a read of only some topics does not block: it must not hold up the others
            block_ms = int(worker.block * 1000) if len(chosen) == len(active) else None
            try:
                entries = await drive_once_async(blocking, read_plan(
                    worker.group, worker.consumer, streams_of([keys], chosen),
                    free // len(chosen), block_ms, clock=deadlines or worker.views.events))
                deadlines = deadlines or has_deadline(entries)  # docs/expiry.md#cost
                failures = 0
                worker.liveness.answered()  # /readyz: docs/operations.md#probes
            except RETRYABLE as exc:
                failures += 1
                worker.liveness.failed(exc)  # every running job touched before the next reclaim
                await pause_after_failure(failures, "read", exc)
                continue
            except GroupNotFound:  # the group is gone, or the stream or group was deleted
                await worker.register()  # while this read blocked (data lost, FLUSHALL)
                continue
            # the core's sort: entries of a topic paused, limited or staged since the read go
            # back (not an attempt), for the take loop or for after the resume
            run, back = worker.core.sort(entries)
            settling.hand_back(worker, back)
            worker.start_entries(run)
    finally:
        await blocking.aclose()
