"""What ``q.reserve`` and its reservations report to the consumer observer
(``telemetry/observer.py``, docs/design.md#observer): each job handed out is a start (its
lateness, by priority for a staged topic's job), each ack or fail a settle with its outcome, the
jobs a round dead-lettered past their deadline are ``expired``, those that can never run
``dead``, and the entries without a job id it dropped ``dropped``. So a job consumed only by
``q.reserve`` (or the HTTP consumer, which is ``q.reserve`` + a transport) shows in the
dashboard's lateness and throughput as a Worker's does.

A reserve caller has no loop of its own: the record is flushed after a reserve or a settle once
``FLUSH_EVERY`` has passed (one more round trip then), and at ``close``.
"""

from __future__ import annotations

import time
from typing import Any

from ..io.steps import run_step_sync
from ..protocol.deliveries import EXPIRED
from ..protocol.plan import Command
from ..telemetry.clock import CLOCK_SAMPLES, offset_of, server_clock_offset
from ..telemetry.observer import ConsumerObserver
from .core.constants import default_consumer_name
from .core.receipts import Receipt
from .core.reserving import Round

TIME = Command(("TIME",))


class Observed:
    """The observer of one queue object's reserve calls (made on first use)."""

    config: Any  # the face's QueueConfig
    _pull_observer: ConsumerObserver | None = None

    @property
    def observer(self) -> ConsumerObserver:
        """This queue object's consumer observer: its reserve calls and settles report here;
        a driver on top (the HTTP service) adds its metrics as a ``Reporter``."""
        if self._pull_observer is None:
            self._pull_observer = ConsumerObserver(self.config.name,
                                                   f"pull-{default_consumer_name()}")
        return self._pull_observer


def _dropped_by_round(observer: ConsumerObserver, found: Round, topic: str, group: str) -> None:
    """Report the jobs a round dead-lettered past their deadline (``expired``) or because
    they can never run (``dead``), and the entries without a job id it dropped (``dropped``),
    as a worker reports them."""
    counts = {"expired": 0, "dead": 0, "dropped": 0}
    for job_id, error in found.dropped:
        counts["expired" if error == EXPIRED else "dead" if job_id else "dropped"] += 1
    for outcome, count in counts.items():
        if count:
            observer.settled(topic, group, outcome, count)


def _clock_sync(client: Any) -> float:
    """Server ms - local ms from the fastest of a few ``TIME`` calls (0 when they fail)."""
    best: tuple[float, float] | None = None
    try:
        for _ in range(CLOCK_SAMPLES):
            sent = time.time()
            reply = run_step_sync(client, TIME)
            if isinstance(reply, dict):  # a cluster client: one node's answer
                reply = next(iter(reply.values()))
            sample = offset_of(sent, time.time(), reply)
            if best is None or sample[1] < best[1]:
                best = sample
    except Exception:  # lateness on the local clock beats a failed reserve
        return 0.0
    return 0.0 if best is None else best[0]


def observe_round_sync(face: Observed, client: Any, found: Round, topic: str,
                       group: str) -> None:
    """Report a reserve round's hand-outs and expired jobs, then flush when due."""
    observer = face.observer
    if found.reserved and observer.needs_clock:
        observer.clock_offset_ms = _clock_sync(client)
    for r in found.reserved:
        observer.started(r.job.topic, group, r.job.due, r.priority, r.job.id)
    _dropped_by_round(observer, found, topic, group)
    observer.flush_sync(client, observer.due_flush())


async def observe_round_async(face: Observed, client: Any, found: Round, topic: str,
                              group: str) -> None:
    """``observe_round_sync`` on an asyncio client."""
    observer = face.observer
    if found.reserved and observer.needs_clock:
        observer.clock_offset_ms = await server_clock_offset(client)
    for r in found.reserved:
        observer.started(r.job.topic, group, r.job.due, r.priority, r.job.id)
    _dropped_by_round(observer, found, topic, group)
    await observer.flush_async(client, observer.due_flush())


def settled_sync(face: Observed, client: Any, receipt: Receipt, outcome: str) -> None:
    """Report one reservation settled as ``outcome``, then flush when due."""
    observer = face.observer
    observer.settled(receipt.topic, receipt.group, outcome, 1, receipt.id)
    observer.flush_sync(client, observer.due_flush())


async def settled_async(face: Observed, client: Any, receipt: Receipt, outcome: str) -> None:
    """``settled_sync`` on an asyncio client."""
    observer = face.observer
    observer.settled(receipt.topic, receipt.group, outcome, 1, receipt.id)
    await observer.flush_async(client, observer.due_flush())


def close_sync(face: Any) -> None:
    """Flush what is left (bounded: Redis may be away); nothing when nothing was counted (a
    producer's ``close`` makes no client for it)."""
    observer = face._pull_observer
    if observer is not None and observer.record.counts:
        observer.flush_sync(face.client, observer.record.take(), 1.0)


async def close_async(face: Any) -> None:
    """``close_sync`` on an asyncio face."""
    observer = face._pull_observer
    if observer is not None and observer.record.counts:
        await observer.flush_async(face.client, observer.record.take(), 1.0)


def outcome_of(failed: str) -> str:
    """The outcome a ``fail`` reports: ``dead``, else ``retried`` (a snooze too, as a worker
    counts it)."""
    return "dead" if failed == "dead" else "retried"
