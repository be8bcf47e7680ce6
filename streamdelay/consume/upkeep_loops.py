"""The worker's background duties: heartbeats, reclaiming silent consumers' jobs, idle watch,
and handing unfinished jobs back at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time

from ..base.errors import LayoutError
from ..dispatch.outbox import outbox_key
from ..io.clients import is_cluster
from ..io.runner import RETRYABLE, drive_async, drive_once_async
from ..protocol import streams
from ..protocol.batching import batches, by_partition
from ..protocol.keys import PartitionKeys
from ..protocol.layouts import join_fleet_call, layout_of
from ..protocol.plan import Command, Plan
from ..protocol.replies import parse_stats
from ..protocol.scripts import script
from ..telemetry.job_logs import delivery_fields
from . import abort_watch as control
from .core.cadence import PRUNE, RECLAIM
from .core.constants import PRUNE_EVERY_S
from .core.consumer_core import Back, hand_back_apart, hand_back_outcomes
from .core.settle_plans import Held, keep_alive_plan
from .core.upkeep_plans import prune_plan, reclaim_plan
from .delivery import Delivery
from .fleet_self import until_renewal
from .liveness import Liveness
from .upkeep_host import UpkeepHost

log = logging.getLogger("streamdelay.worker")
HEARTBEAT_TICK = 0.2
# A heartbeat unanswered this long counts as failed: the next tick sends another beside it, on
# another connection (a cut-off one waits out TCP's retransmission backoff), at most
# HEARTBEAT_ATTEMPTS at once (the oldest is cancelled), docs/guarantees.md#never-twice-at-once
HEARTBEAT_PATIENCE = 0.5
HEARTBEAT_ATTEMPTS = 4
# A delivery whose handler reported progress is touched this soon after its last touch (else
# at a third of its ttr), carrying the value: progress shows within about a second
PROGRESS_EVERY = 1.0
TOUCH_BATCH = 500
IDLE_TICK = 0.1
# Consumers that own nothing and were silent PRUNE_IDLE_S are removed (one per worker process
# that ever read would otherwise pile up); checked about once a minute.
PRUNE_EVERY = PRUNE_EVERY_S
# Jobs whose def handler's thread outlived a shutdown come back this long after the hand-back,
# by when the process (which exits right after it) is gone (docs/worker.md#handler_timeout).
HANDBACK_DELAY = 2.0
STOPPING_SAY_S = 1.0  # longest wait for the "stopping" renewal at a graceful stop


def _partition(delivery: Delivery) -> int:
    return delivery.partition


async def touch(worker: UpkeepHost, deliveries: list[Delivery], *, quiet: bool = False,
                once: bool = False) -> None:
    """Reset the idle time of deliveries still running (one ``touchJobs`` call per batch);
    ``once``: each call sent once, a connection error raised (the heartbeat loop's own policy).

    Deliveries this consumer no longer owns are marked ``lost`` (logged unless ``quiet``).
    """
    for partition, batch in by_partition(deliveries, _partition).items():
        keys = worker.partitions[partition]
        for chunk in batches(batch, TOUCH_BATCH):
            held: list[Held] = []
            sent: list[bytes | None] = []  # the latest value of each delivery that reported one
            for delivery in chunk:
                delivery.touching()  # this touch may report 'started': the settle must not
                sent.append(delivery.progress)
                held.append(Held(delivery.topic, delivery.job_id, delivery.entry_id,
                                 delivery.ttr_ms, delivery.progress, bool(len(worker.leases))
                                 and worker.leases.held(partition, delivery.topic,
                                                        delivery.entry_id)))
            now = time.monotonic()
            plan = keep_alive_plan(keys, worker.group, worker.consumer, held)
            lost_ids = (await drive_once_async(worker.client, plan) if once else
                        await worker.run_plan(plan, "heartbeat"))
            for delivery, value in zip(chunk, sent, strict=True):
                if delivery.touched(now, value, delivery.entry_id in lost_ids) and not quiet:
                    log.warning("job %s is no longer held by this worker (reclaimed or "
                                "cancelled); its result will be ignored", delivery.job_id,
                                extra=delivery_fields(worker.config.name, delivery.topic,
                                                      delivery.job_id, delivery.run))


class _Beat:
    """One heartbeat in flight: its task, when it went out, the failures counted before it,
    whether it touches every running delivery, and whether it was counted late."""

    def __init__(self, task: asyncio.Task[None], epoch: int, whole: bool) -> None:
        self.task, self.epoch, self.whole = task, epoch, whole
        self.began = time.monotonic()
        self.late = False
        task.add_done_callback(_retrieved)  # one cancelled at the cap is never reaped


def _retrieved(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()


async def heartbeat_loop(worker: UpkeepHost) -> None:
    """Touch each running delivery once a third of its ttr has passed since the last touch.

    Not one call retried with backoff: each heartbeat is sent once; one that fails or stays
    unanswered ``HEARTBEAT_PATIENCE`` counts as a lost contact, and then every tick sends a
    touch of every running delivery (beside the ones still in flight) until one answers, so
    the first call that gets through after an outage touches them all, and the reclaim waits
    for it (docs/guarantees.md#never-twice-at-once).

    A delivery marked lost is touched too while it runs: one whose job was rescheduled
    meanwhile keeps that job's next run waiting behind it (docs/guarantees.md#never-twice-at-
    once); one another consumer took is not touched by the script (it checks the owner)."""
    live = worker.liveness
    flying: list[_Beat] = []
    try:
        while True:
            await asyncio.sleep(HEARTBEAT_TICK)
            _reap(live, flying)
            running = list(worker.inflight.values())
            if live.retouch:
                if not running:
                    live.touched_all(live.epoch)
                    continue
                while len(flying) >= HEARTBEAT_ATTEMPTS:  # the oldest, long past its patience
                    flying.pop(0).task.cancel()
                flying.append(_Beat(asyncio.create_task(touch(worker, running, once=True)),
                                    live.epoch, True))
                continue
            if flying:  # one in flight, within its patience
                continue
            # a tick early rather than up to a tick late: touches at most ttr / 3 apart, so a
            # cut-off shorter than 2/3 ttr minus the reconnect keeps its jobs (guarantees.md)
            now = time.monotonic() + HEARTBEAT_TICK
            due = [d for d in running
                   if now - d.last_touch >= (min(PROGRESS_EVERY, d.ttr_ms / 3000.0)
                                             if d.progress_fresh else d.ttr_ms / 3000.0)]
            if due:
                flying.append(_Beat(asyncio.create_task(touch(worker, due, once=True)),
                                    live.epoch, len(due) == len(running)))
    finally:
        for beat in flying:
            beat.task.cancel()
        await asyncio.gather(*(b.task for b in flying), return_exceptions=True)


def _reap(live: Liveness, flying: list[_Beat]) -> None:
    """Count the heartbeats that answered, failed or are late."""
    now = time.monotonic()
    for beat in list(flying):
        if not beat.task.done():
            if not beat.late and now - beat.began >= HEARTBEAT_PATIENCE:
                beat.late = True
                live.failed(f"a heartbeat unanswered for {HEARTBEAT_PATIENCE:g}s")
            continue
        flying.remove(beat)
        exc = None if beat.task.cancelled() else beat.task.exception()
        if exc is None and not beat.task.cancelled():
            if beat.whole:
                live.touched_all(beat.epoch)
            continue
        if exc is not None and not isinstance(exc, RETRYABLE) and live.lost_at is None:
            log.error("heartbeat failed: %r", exc)  # once, as a lost contact is
        if not beat.late:
            live.failed(exc or "cancelled")


async def reclaim_once(worker: UpkeepHost) -> int:
    """Re-queue deliveries of silent consumers (idle past their job's ttr) on every topic: the
    one reclaim plan (``consume/core/upkeep_plans.py``), each job's own ttr, re-queued for
    anyone; never
    a delivery this worker runs, nor silence of an outage (``Witness``). Each call is sent
    once: a connection error is raised (``reclaim_loop``)."""
    cfg = worker.config
    witness = worker.liveness.witness
    running: dict[tuple[int, str], list[str]] = {}
    for partition, topic, entry_id in list(worker.inflight):
        running.setdefault((partition, topic), []).append(entry_id)
    witness.running = running
    found = await drive_once_async(worker.client, reclaim_plan(
        cfg.name, cfg.partitions, worker.group, worker.topics, witness=witness))
    if found.gone:  # a stream or the group was deleted: register again
        await worker.register()
    if worker.metrics is not None:
        for topic, group in sorted(found.seen):
            if (reclaimed := found.count((topic, group))):
                worker.metrics.count(topic, "reclaimed", reclaimed)
    return found.count()


async def prune_once(worker: UpkeepHost) -> list[str]:
    """Remove the group's consumers that own nothing and were silent for ``worker.prune_idle``."""
    cfg = worker.config
    return await drive_async(worker.client, prune_plan(
        cfg.name, cfg.partitions, worker.group, worker.topics, int(worker.prune_idle * 1000)),
        None, "prune")


async def reclaim_loop(worker: UpkeepHost) -> None:
    """Every ``reclaim_interval`` (jittered), reclaim jobs of silent consumers; every
    ``prune_every`` seconds, remove consumers that are gone and own nothing."""
    next_prune = time.monotonic() + worker.prune_every * random.uniform(0.1, 1.0)
    while True:
        await asyncio.sleep(worker.reclaim_interval * random.uniform(0.8, 1.2))
        if worker.liveness.retouch and worker.inflight:
            continue  # after a failed call the heartbeat touches our own running jobs first
        try:
            moved = await reclaim_once(worker)
        except RETRYABLE as exc:
            worker.liveness.failed(exc)
            continue
        _ran(worker, RECLAIM, worker.reclaim_interval)
        if moved:
            worker.counts.add("reclaimed", moved)
            log.info("re-queued %d job(s) of silent consumers", moved)
        if time.monotonic() >= next_prune:
            next_prune = time.monotonic() + worker.prune_every * random.uniform(0.8, 1.2)
            removed = await prune_once(worker)
            _ran(worker, PRUNE, worker.prune_every)
            if removed:
                log.info("removed %d consumer(s) that were gone and owned nothing: %s",
                         len(removed), ", ".join(removed[:10]))


def _ran(worker: UpkeepHost, duty: str, every: float) -> None:
    """Tell the worker's consumer core (its cadence is the process's one:
    ``consume/core/cadence.py``) that this worker ran ``duty`` for its group's topics: a
    reserve caller of the same group and topic in this process leaves it to the worker until
    ``every`` has passed. The worker runs its own passes whatever the cadence says: its
    ``Witness`` needs a call every interval (docs/guarantees.md)."""
    worker.core.ran(duty, [(worker.group, topic) for topic in worker.topics], time.monotonic(),
                    every)


async def join_fleet(worker: UpkeepHost) -> None:
    """Say in the queue's fleet record that this consumer is live and which record layouts it
    reads; a ``LayoutError`` when the queue is on one it cannot read (docs/keys.md#fleet)."""
    call = join_fleet_call(worker.config.name, worker.consumer, worker.fleet_info(),
                           3 * worker.fleet_every)  # what it runs: docs/operations.md#workers
    layout = await worker.call(call, "fleet")
    layout_of(layout, PartitionKeys(worker.config.name, 0).meta)


async def say_state(worker: UpkeepHost) -> None:
    """Renew the fleet entry at once when the worker's state changes (``quiet``, ``stopping``:
    docs/operations.md#workers); skipped while Redis does not answer, bounded otherwise."""
    if worker.liveness.down:
        return
    with contextlib.suppress(asyncio.TimeoutError, OSError, LayoutError):  # it just expires
        await asyncio.wait_for(join_fleet(worker), STOPPING_SAY_S)


async def fleet_loop(worker: UpkeepHost) -> None:
    """Renew the fleet entry every ``fleet_every`` (``FLEET_EVERY_S``), or within a second of
    a change of what it runs (``fleet.until_renewal``); stop the worker (an error logged) once
    the queue is on a layout this release cannot read: it never serves one."""
    while True:
        await until_renewal(worker.fleet_every * random.uniform(0.8, 1.0), worker.fleet_info)
        try:
            await join_fleet(worker)
        except LayoutError as exc:
            log.error("%s; stopping the worker", exc)
            worker.stop()
            return


async def idle_watch(worker: UpkeepHost, count_delayed: bool = True) -> None:
    """Stop the worker when its topics have nothing delayed, ready (in a stream or a staged
    topic's lanes), reserved or in flight; ``count_delayed=False``: delayed jobs not due yet do
    not keep it running (``streamdelay.testing.drain`` fast-forwards them between runs,
    docs/testing.md), a due one not promoted yet does: it is ready, the dispatcher moves it."""
    while True:
        await asyncio.sleep(IDLE_TICK)
        if worker.inflight or worker.acks_pending:
            continue
        busy = False
        for keys in worker.partitions:
            reply = parse_stats(await worker.call(
                script("readStats").call(keys.script_keys(), []), "stats"))
            if reply.head_topic in worker.topics and 0 <= reply.head_due_ms <= reply.now_ms:
                busy = True  # due, not promoted yet: stopping now would strand it (testing.md)
            for row in reply.rows:
                if row.topic in worker.topics and (
                        (count_delayed and row.delayed) or row.in_stream):
                    busy = True
            # jobs of staged topics waiting in their lanes (docs/priorities.md) are ready too
            lanes = await worker.call(Command(("HMGET", keys.ready, *sorted(worker.topics))),
                                      "stats")
            if any(int(n or 0) > 0 for n in lanes):
                busy = True
            if len(worker.partitions) > 1 and await worker.call(
                    streams.length(outbox_key(keys)), "stats"):
                busy = True  # a workflow hand-over not forwarded yet (docs/workflows.md)
        if not busy and not worker.inflight:
            worker.stop()
            return


async def release_unfinished(worker: UpkeepHost) -> None:
    """Cancel handlers still running after the grace period and hand their jobs back at once.

    A job whose def handler's thread still runs is not handed back here: it would run twice at
    once. ``Worker.run`` hands it back with a delay just before the process exits
    (``release_later``); under ``serve`` it comes back after its ttr.
    """
    unfinished = [d for d in worker.inflight.values() if d.job_id and not d.thread_running]
    for delivery in worker.inflight.values():
        if delivery.thread_running:
            log.warning("job %s (%s): its def handler's thread still runs; its job is not "
                        "handed back while it does", delivery.job_id, delivery.topic,
                        extra=delivery_fields(worker.config.name, delivery.topic,
                                              delivery.job_id, delivery.run))
        if delivery.task is not None:
            delivery.task.cancel()
    await _release(worker, unfinished, 0)


async def release_later(worker: UpkeepHost, deliveries: list[Delivery]) -> None:
    """Hand jobs back due ``HANDBACK_DELAY`` from now, not counted as an attempt: the last step
    of a process whose def handler threads outlived the shutdown (``releaseJobsLater``)."""
    delay_ms = int(HANDBACK_DELAY * 1000)
    try:
        await _release(worker, deliveries, delay_ms)
    finally:
        await worker.client.aclose()


async def _release(worker: UpkeepHost, deliveries: list[Delivery], later_ms: int) -> None:
    """Hand ``deliveries`` back at once or due ``later_ms`` from now: the core's one hand-back
    (``consume/core/consumer_core.py``: a release per partition, their leases freed with it,
    in one round trip bounded to 5 s; on a Cluster each partition's release and the frees
    apart, side by side, each bounded to 5 s: a node down fails its own partitions only),
    counted as released per partition; a release that fails leaves its jobs to come back
    after their ttr."""
    await control.flush_before_release(worker, deliveries)  # docs/worker.md#checkpoints
    if not deliveries:
        return
    leases = worker.leases
    rows = [Back(d.partition, d.topic, d.job_id, d.entry_id, bool(len(leases)) and bool(
        leases.pop(d.partition, [(d.topic, d.entry_id)]))) for d in deliveries]
    name, group = worker.config.name, worker.group
    # one round trip on one server; on a Cluster a partition's node answers or fails alone
    plans = (hand_back_apart(name, group, rows, later_ms) if is_cluster(worker.client)
             else [(rows, hand_back_outcomes(name, {group: rows}, later_ms))])
    found = await asyncio.gather(*(_bounded(worker, plan) for _, plan in plans))
    batches = by_partition(deliveries, _partition)
    for (sent, _), outcomes in zip(plans, found, strict=True):
        if isinstance(outcomes, BaseException):
            if sent:
                log.warning("could not hand back %d job(s) (%r); they return after ttr",
                            len(sent), outcomes)
            continue
        for partition, released in outcomes:
            _count_release(worker, batches[partition], released)


async def _bounded(worker: UpkeepHost, plan: Plan[list[tuple[int, int | BaseException]]]
                   ) -> list[tuple[int, int | BaseException]] | BaseException:
    """A hand-back plan's outcomes, or what stopped it within 5 s (a shutdown is bounded)."""
    try:
        return await asyncio.wait_for(worker.run_plan(plan, "release"), 5.0)
    except (asyncio.TimeoutError, OSError, *RETRYABLE) as exc:
        return exc


def _count_release(worker: UpkeepHost, batch: list[Delivery], released: int | BaseException
                   ) -> None:
    """Count one partition's release (or log why it was refused)."""
    if isinstance(released, BaseException):
        log.warning("could not hand back %d job(s) (%s); they return after ttr",
                    len(batch), released)
        return
    worker.counts.add("released", released)
    if worker.metrics is not None:
        worker.metrics.released(batch, released)
