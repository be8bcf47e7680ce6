"""The pull API: ``Queue.reserve`` / ``AsyncQueue.reserve`` and the reservations they return.

A consumer without a ``Worker`` takes jobs with ``reserve``, then settles each with ``ack``,
``fail`` or keeps it with ``touch``; the receipt rebuilds a reservation in any process
(``Queue.reservation``). This is the Reservation, one of the two drivers of the consumer plans
(``consume/core/``; the Worker is the other): these two mixins only run them, sync and async
(docs/pull.md).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..base.models import Delay, Job
from ..io.agreement import agree_partitions_async, agree_partitions_sync
from ..io.clients import AsyncClient, SyncClient, async_client, is_cluster, sync_client
from ..io.config import QueueConfig
from ..io.runner import drive_async, drive_sync
from ..protocol.deliveries import EXPIRED
from ..protocol.plan import Plan
from . import reservation_observer as observing
from .core import control_plans as control
from .core.cadence import site_of
from .core.constants import DEFAULT_GROUP, REFRESH_S, default_consumer_name
from .core.consumer_core import ConsumerCore
from .core.receipts import Receipt, ReceiptKey, decode_receipt
from .core.reserving import (
    MAX_WAIT_S,
    READ_SLICE_S,
    ReserveArgs,
    ReserveState,
    Round,
    reserve_args,
    round_plan,
)
from .core.settle_plans import ack_receipt_plan, release_receipts_plan
from .reservation_observer import Observed

log = logging.getLogger("streamdelay.pull")


def _log_dropped(found: Round, args: ReserveArgs, face: _PullFace) -> None:
    expired = 0
    for job_id, error in found.dropped:  # as a worker logs them
        if error == EXPIRED:  # expected: the producer gave it a deadline (docs/expiry.md)
            expired += 1
            log.info("job %s expired: its deadline passed before it ran", job_id)
        elif not job_id:  # no job stands behind it (docs/security.md), as a worker logs it
            log.warning("dropped stream entry of topic %s (no job id): %s", args.topic,
                        error.splitlines()[0])
        else:
            log.warning("job %s is dead: %s", job_id, error.splitlines()[0])
    if expired and face.on_expired is not None:
        face.on_expired(args.topic, args.group, expired)


class _ReservationData:
    """What a reservation shows: the job's ``id``, ``topic``, ``body``, ``headers``,
    ``attempt`` (1-based, every delivery counts), ``due`` (epoch ms, server clock), ``ttr``
    (seconds) and the opaque, URL-safe ``receipt``; ``priority`` (``"0"``-``"9"``) for a job
    of a staged topic (docs/priorities.md), else None; ``last_checkpoint``: what an earlier
    attempt of the job kept (None: none). A reservation rebuilt from a receipt has no body
    (None), no headers, no priority and no checkpoint."""

    __slots__ = ("_receipt", "attempt", "body", "due", "headers", "id", "last_checkpoint",
                 "priority", "receipt", "topic", "ttr")

    def __init__(self, receipt: Receipt, text: str, job: Job | None,
                 priority: str | None = None) -> None:
        self._receipt = receipt
        self.receipt = text
        self.id = receipt.id
        self.topic = receipt.topic
        self.attempt = receipt.attempt
        self.due = receipt.due
        self.ttr = receipt.ttr_ms / 1000
        self.body: Any = None if job is None else job.body
        self.headers: dict[str, str] = {} if job is None else job.headers
        self.priority = priority
        # what an earlier attempt kept with touch(checkpoint=) (docs/worker.md#checkpoints)
        self.last_checkpoint: Any = None if job is None else job.last_checkpoint

    def __repr__(self) -> str:
        """Topic, id and attempt (the body may be large or secret)."""
        return (f"{type(self).__name__}(topic={self.topic!r}, id={self.id!r}, "
                f"attempt={self.attempt})")


class Reservation(_ReservationData):
    """One delivery taken by ``Queue.reserve``: settle it with ``ack`` or ``fail`` within its
    ttr, or ``touch`` it to keep it longer. Each raises ``StaleReceipt`` when the delivery is no
    longer current (reclaimed after its ttr, cancelled, replaced or settled)."""

    __slots__ = ("_queue",)

    def __init__(self, queue: SyncPull, receipt: Receipt, text: str, job: Job | None,
                 priority: str | None = None) -> None:
        super().__init__(receipt, text, job, priority)
        self._queue = queue

    def ack(self, result: Any = None) -> None:
        """The job is done: it is forgotten (or kept as a ``done`` tombstone, ``keep_done``);
        ``result`` is kept for the job's ``keep_result`` (docs/results.md)."""
        self._queue._settle(self._queue._ack_plan(self._receipt, result))
        observing.settled_sync(self._queue, self._queue.client, self._receipt, "handled")

    def fail(self, error: str, retry_delay: Delay | None = None, dead: bool = False, *,
             snooze: Delay | None = None, checkpoint: Any = None) -> str:
        """The attempt failed: the job comes back after ``retry_delay`` seconds (None: its
        backoff), or goes to the dead letters after its last attempt or with ``dead=True``.
        Returns ``"retried"`` or ``"dead"``. ``snooze=``: back after that many seconds
        without spending an attempt (``"snoozed"``); ``checkpoint=``: what the next attempt
        reads as ``job.last_checkpoint`` (docs/worker.md#checkpoints). ``Aborted`` when the
        job was aborted meanwhile."""
        result: str = self._queue._settle(control.fail_receipt_plan(
            self._queue.config.name, self._queue._key(), self._receipt, error, retry_delay,
            dead, snooze, checkpoint))
        observing.settled_sync(self._queue, self._queue.client, self._receipt,
                               observing.outcome_of(result))
        return result

    def touch(self, progress: Any = None, *, checkpoint: Any = None) -> None:
        """Heartbeat: the ttr counts again from now (a worker does this every ttr/3); with
        ``progress`` (a number or a small JSON value), ``get`` shows it while the job runs;
        with ``checkpoint`` (at most 64 KiB of JSON), the next attempt of the job reads it as
        ``job.last_checkpoint``. ``sd.Aborted`` when the job was aborted
        (``cancel(id, abort=True)``): stop working on it."""
        self._queue._settle(control.touch_receipt_plan(
            self._queue.config.name, self._queue._key(), self._receipt, progress, checkpoint))

    def release(self) -> bool:
        """Hand the job back at once, no attempt spent: it goes to the tail of its topic for
        any consumer (``Queue.release``). False when the delivery was no longer current."""
        return self._queue.release([self]) == 1


class AsyncReservation(_ReservationData):
    """One delivery taken by ``AsyncQueue.reserve``; the methods of ``Reservation``, awaitable."""

    __slots__ = ("_queue",)

    def __init__(self, queue: AsyncPull, receipt: Receipt, text: str, job: Job | None,
                 priority: str | None = None) -> None:
        super().__init__(receipt, text, job, priority)
        self._queue = queue

    async def ack(self, result: Any = None) -> None:
        """The job is done; see ``Reservation.ack``."""
        await self._queue._settle(self._queue._ack_plan(self._receipt, result))
        await observing.settled_async(self._queue, self._queue.client, self._receipt, "handled")

    async def fail(self, error: str, retry_delay: Delay | None = None, dead: bool = False, *,
                   snooze: Delay | None = None, checkpoint: Any = None) -> str:
        """The attempt failed; see ``Reservation.fail``."""
        result: str = await self._queue._settle(control.fail_receipt_plan(
            self._queue.config.name, self._queue._key(), self._receipt, error, retry_delay,
            dead, snooze, checkpoint))
        await observing.settled_async(self._queue, self._queue.client, self._receipt,
                                      observing.outcome_of(result))
        return result

    async def touch(self, progress: Any = None, *, checkpoint: Any = None) -> None:
        """Heartbeat, with an optional progress or checkpoint; see ``Reservation.touch``."""
        await self._queue._settle(control.touch_receipt_plan(
            self._queue.config.name, self._queue._key(), self._receipt, progress, checkpoint))

    async def release(self) -> bool:
        """Hand the job back, no attempt spent; see ``Reservation.release``."""
        return await self._queue.release([self]) == 1


def _block_ms(deadline: float) -> int:
    """How long the next read may block: the time left, at most ``READ_SLICE_S`` (0: none)."""
    left = deadline - time.monotonic()
    return math.ceil(min(left, READ_SLICE_S) * 1000) if left > 0 else 0


class _PullFace(Observed):
    """State both faces keep for the pull API (per queue object), and the consumer observer its
    reserve calls and settles report to (``reservation_observer.py``, docs/design.md#observer)."""

    config: QueueConfig
    _pull_state: ReserveState | None = None
    _pull_consumer: str | None = None
    # called with (topic, group, count) when a reserve round dead-lettered expired jobs (the
    # HTTP service counts them: docs/expiry.md)
    on_expired: Callable[[str, str, int], None] | None = None

    def _state(self) -> ReserveState:
        """This object's consumer core and receipt key (made on first use)."""
        if self._pull_state is None:
            self._pull_state = ReserveState(ConsumerCore(site_of(self.config.url,
                                                                 self.config.name)))
            self._pull_consumer = default_consumer_name()
        return self._pull_state

    def _args(self, topic: str, group: str, consumer: str | None, wait: Delay, count: int
              ) -> tuple[ReserveArgs, ReserveState]:
        state = self._state()
        return (reserve_args(topic, group, self._pull_consumer if consumer is None else consumer,
                             wait, count), state)

    def _key(self) -> ReceiptKey:
        """The queue's receipt key as this object knows it (shared by reserve and settles)."""
        return self._state().key

    def _ack_plan(self, receipt: Receipt, result: Any) -> Plan[None]:
        return ack_receipt_plan(self.config, self._key(), receipt, result)

    def _receipt(self, receipt: str) -> Receipt:
        return decode_receipt(receipt, self.config.name, self.config.partitions)


class SyncPull(_PullFace):
    """``reserve`` and ``reservation`` of ``Queue`` (blocking)."""

    _pull_client: SyncClient | None = None

    @property
    def client(self) -> SyncClient:
        """The queue's command client (``Queue.client``)."""
        raise NotImplementedError

    def _reading_client(self) -> SyncClient:
        """A client whose socket timeout is above the longest wait (created on first use)."""
        if self._pull_client is None:
            self._pull_client = sync_client(self.config.url,
                                            MAX_WAIT_S + self.config.socket_timeout,
                                            self.config.reserve_connections)
        return self._pull_client

    def _settle(self, plan: Plan[Any]) -> Any:
        return drive_sync(self.client, plan, self.config.retry_for)

    def reserve(self, topic: str, *, group: str = DEFAULT_GROUP, consumer: str | None = None,
                wait: Delay = 0, count: int = 1) -> list[Reservation]:
        """Take up to ``count`` (≤ 100) ready jobs of ``topic`` as consumer ``consumer`` of
        ``group``, waiting up to ``wait`` seconds (≤ 30) for one when none is ready; ``[]``
        when none came. A paused topic gives none. Settle each within its ttr (docs/pull.md).

        ``consumer`` defaults to one ``host-pid-random`` name per queue object.
        """
        args, state = self._args(topic, group, consumer, wait, count)
        cfg = self.config
        client = self._reading_client()
        agree_partitions_sync(client, cfg.url, cfg.name, cfg.partitions, cfg.retry_for,
                              events=cfg.events_bound)
        deadline = time.monotonic() + args.wait
        while True:
            found: Round = drive_sync(client, round_plan(
                cfg, state, args, _block_ms(deadline), time.monotonic(), is_cluster(client)),
                cfg.retry_for)
            _log_dropped(found, args, self)
            observing.observe_round_sync(self, self.client, found, args.topic, args.group)
            left = deadline - time.monotonic()
            if found.reserved or left <= 0:
                return [Reservation(self, r.receipt, r.text, r.job, r.priority)
                        for r in found.reserved]
            if found.paused:
                time.sleep(min(REFRESH_S, left))
            elif found.rest_s:  # a limited topic's rate holds back: until the next token
                time.sleep(min(found.rest_s, left))

    def release(self, reservations: Iterable[_ReservationData]) -> int:
        """Hand ``reservations`` back at once, none counted as an attempt: each job goes to the
        tail of its topic for any consumer, as a worker hands back what it holds when it
        stops. For jobs taken but not to be run (a consumer shutting down, an answer that
        cannot be delivered). Returns how many were still current; one round trip per
        partition (docs/pull.md)."""
        found: int = self._settle(release_receipts_plan(
            self.config.name, self._key(), [r._receipt for r in reservations]))
        return found

    def reservation(self, receipt: str) -> Reservation:
        """Rebuild a reservation from its ``receipt`` (no I/O) to ack, fail or touch it, in
        any process; a receipt that does not parse raises ``ValidationError`` (field
        ``receipt``). The rebuilt one has no body and no headers."""
        return Reservation(self, self._receipt(receipt), receipt, None)

    def _close_pull(self) -> None:
        observing.close_sync(self)  # what is left of the dashboard's record
        if self._pull_client is not None:
            self._pull_client.close()
            self._pull_client = None


class AsyncPull(_PullFace):
    """``reserve`` and ``reservation`` of ``AsyncQueue`` (asyncio)."""

    _pull_client: AsyncClient | None = None

    @property
    def client(self) -> AsyncClient:
        """The queue's command client (``AsyncQueue.client``)."""
        raise NotImplementedError

    def _reading_client(self) -> AsyncClient:
        if self._pull_client is None:
            self._pull_client = async_client(self.config.url,
                                             MAX_WAIT_S + self.config.socket_timeout,
                                             self.config.reserve_connections)
        return self._pull_client

    async def _settle(self, plan: Plan[Any]) -> Any:
        return await drive_async(self.client, plan, self.config.retry_for)

    async def reserve(self, topic: str, *, group: str = DEFAULT_GROUP,
                      consumer: str | None = None, wait: Delay = 0, count: int = 1
                      ) -> list[AsyncReservation]:
        """Take up to ``count`` ready jobs of ``topic``; see ``Queue.reserve``. Concurrent
        calls each hold a connection of their own while they wait."""
        args, state = self._args(topic, group, consumer, wait, count)
        cfg = self.config
        client = self._reading_client()
        await agree_partitions_async(client, cfg.url, cfg.name, cfg.partitions, cfg.retry_for,
                                     events=cfg.events_bound)
        deadline = time.monotonic() + args.wait
        while True:
            found: Round = await drive_async(client, round_plan(
                cfg, state, args, _block_ms(deadline), time.monotonic(), is_cluster(client)),
                cfg.retry_for)
            _log_dropped(found, args, self)
            await observing.observe_round_async(self, self.client, found, args.topic,
                                                args.group)
            left = deadline - time.monotonic()
            if found.reserved or left <= 0:
                return [AsyncReservation(self, r.receipt, r.text, r.job, r.priority)
                        for r in found.reserved]
            if found.paused:
                await asyncio.sleep(min(REFRESH_S, left))
            elif found.rest_s:  # a limited topic's rate holds back: until the next token
                await asyncio.sleep(min(found.rest_s, left))

    async def release(self, reservations: Iterable[_ReservationData]) -> int:
        """Hand ``reservations`` back, no attempt spent; see ``Queue.release``."""
        found: int = await self._settle(release_receipts_plan(
            self.config.name, self._key(), [r._receipt for r in reservations]))
        return found

    def reservation(self, receipt: str) -> AsyncReservation:
        """Rebuild a reservation from its ``receipt``; see ``Queue.reservation``."""
        return AsyncReservation(self, self._receipt(receipt), receipt, None)

    async def _close_pull(self) -> None:
        await observing.close_async(self)
        if self._pull_client is not None:
            await self._pull_client.aclose()
            self._pull_client = None
