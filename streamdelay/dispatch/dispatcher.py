"""The dispatcher: moves due jobs from the delayed set into topic streams, on time.

Per partition it calls ``promoteDue`` (one bounded batch), then sleeps by its own monotonic clock
until the next due time the script reported, to the µs (``timer.PreciseWait``), as read on its
estimate of the server clock (``timer.ServerClock``: the offset of the fastest recent call). A
producer that enqueues a new earliest job sets the partition's wake marker; a blocking
``BZPOPMIN`` on a dedicated connection turns that into an immediate wake-up. A slow safety tick
covers lost wake-ups. Any number of dispatchers may run: the script moves each job once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..io.agreement import agree_partitions_async
from ..io.clients import AsyncClient, async_client
from ..io.config import QueueConfig
from ..io.lane import MISSED, AsyncLane
from ..io.loop_supervision import cancel_all, pause_after_failure, supervised
from ..io.precise_wait import PreciseWait, ServerClock
from ..io.runner import RETRYABLE, call_with_retry, drive_async
from ..io.steps import run_step_async
from ..protocol.keys import PartitionKeys, partition_keys
from ..protocol.plan import Command
from ..protocol.replies import parse_promote
from ..protocol.scripts import ScriptCall, script
from .aging import aging_plan
from .outbox import forward_plan, read_outbox_command
from .schedule_firing import LEAD_MS, fire_due_plan

log = logging.getLogger("streamdelay.dispatcher")
# One promoteDue call must not block Redis for more than ~1 ms (docs/keys.md#batch-sizes). Runs
# of 2026-11-24 02:17-02:21 UTC (benchmarks/micro/dispatch.py's dispatch alone, SLOWLOG median per
# call, 100k jobs): 150 jobs 0.53 ms, 200 jobs 0.70-0.73 ms, 250 jobs 0.85 ms.
PROMOTE_BATCH = 200
EXPIRED_AS = "expired "  # promoteDue's reason for a job past its deadline, then its topic
PURGED_AS = "purged "  # its reason for a dead job purged by retention (docs/reliability.md)
# A due schedule that could not be advanced (another dispatcher was first, a damaged record) is
# looked at again after this long, not in a busy loop.
SCHEDULE_RETRY = 1.0


@dataclass(frozen=True)
class PromoteResult:
    """What one ``promoteDue`` call did: jobs moved, the next due time (epoch ms, -1 when the
    delayed set is empty), the server clock it read, in epoch ms and epoch µs, how long the call
    took from send to reply (seconds, local clock) and when it was sent (local monotonic s)."""

    moved: int
    next_due: int
    now: int
    now_us: int
    round_trip: float = 0.0
    schedule_at: int = -1  # when the earliest schedule wants firing, epoch ms (-1: none)
    sent: float = 0.0  # 0.0: unknown


class Dispatcher:
    """Promotes due jobs of every partition of a queue until ``stop()`` is called."""

    def __init__(
        self,
        config: QueueConfig,
        *,
        batch: int = PROMOTE_BATCH,
        safety_tick: float = 5.0,
        client: AsyncClient | None = None,
    ) -> None:
        self.config = config
        self.batch = batch
        self.safety_tick = safety_tick
        self.promoted = 0
        self.expired: dict[str, int] = {}  # topic -> jobs it dead-lettered past their deadline
        self.on_expired: Callable[[str, int], None] | None = None  # metrics hook (topic, n)
        self.purged: dict[str, int] = {}  # dead jobs purged by retention, per topic
        self.on_purged: Callable[[str, int], None] | None = None  # metrics hook (topic, n)
        self.ticks_enqueued = 0
        self.forwarded = 0  # workflow hand-overs applied (docs/workflows.md#across-partitions)
        self._client = client
        self._stopping = asyncio.Event()
        self._wakes: list[asyncio.Event] = []
        self._lanes: dict[int, AsyncLane] = {}  # per partition: its promote calls' connection
        self._calls: dict[PartitionKeys, ScriptCall] = {}

    @property
    def client(self) -> AsyncClient:
        """The command connection pool (created on first use)."""
        if self._client is None:
            self._client = async_client(self.config.url, self.config.socket_timeout)
        return self._client

    async def promote_once(self, keys: PartitionKeys) -> PromoteResult:
        """Run one ``promoteDue`` batch on a partition (retried on connection errors)."""
        call = self._calls.get(keys)
        if call is None or call.args[0] != self.batch:  # the same call every time: built once
            call = self._calls[keys] = script("promoteDue").call(keys.script_keys(),
                                                                   [self.batch, LEAD_MS])
        lane = self._lanes.get(keys.partition)
        if lane is None:
            lane = self._lanes[keys.partition] = AsyncLane()
        sent = time.monotonic()
        reply = await lane.call(self.client, call)  # io/lane.py: held connection
        if reply is MISSED:
            reply = await call_with_retry(self.client, call, None, "dispatch")
        promoted = parse_promote(reply)
        result = PromoteResult(promoted.moved, promoted.next_due_ms, promoted.now_ms,
                               promoted.now_us, time.monotonic() - sent,
                               promoted.schedule_at_ms, sent)
        for job_id, why in promoted.dropped:  # foreign garbage, quarantined
            if why.startswith(EXPIRED_AS):  # expected: docs/expiry.md
                self._count_expired(job_id, why[len(EXPIRED_AS):])
                continue
            if why.startswith(PURGED_AS):  # dead-letter retention: expected
                topic = why[len(PURGED_AS):]
                self.purged[topic] = self.purged.get(topic, 0) + 1
                if self.on_purged is not None:
                    self.on_purged(topic, 1)
                continue
            log.warning("due job %r of queue %s was not promoted: %s", job_id,
                        self.config.name, why,
                        extra={"queue": self.config.name, "job_id": job_id})
        self.promoted += result.moved
        return result

    def _count_expired(self, job_id: str, topic: str) -> None:
        """A job promoteDue dead-lettered: its deadline passed before it was due to run."""
        self.expired[topic] = self.expired.get(topic, 0) + 1
        if self.on_expired is not None:
            self.on_expired(topic, 1)
        log.info("job %s (%s) expired: its deadline passed before it was due", job_id, topic,
                 extra={"queue": self.config.name, "job_id": job_id, "topic": topic})

    async def fire_schedules(self, keys: PartitionKeys) -> int:
        """Enqueue the due ticks of a partition's schedules; how many schedules advanced."""
        outcome = await drive_async(self.client, fire_due_plan(keys), None, "schedules")
        self.ticks_enqueued += outcome.created
        return outcome.advanced

    def stop(self) -> None:
        """Ask every partition loop to end."""
        self._stopping.set()
        for wake in self._wakes:
            wake.set()

    async def run(self) -> None:
        """Serve every partition until ``stop()`` (after checking the partition count).

        May be called again after it returned, in the same or another event loop.
        """
        cfg = self.config
        await agree_partitions_async(self.client, cfg.url, cfg.name, cfg.partitions, None,
                                     events=cfg.events_bound,  # docs/events.md#the-switch
                                     retention=cfg.retention)
        await drive_async(self.client, aging_plan(cfg.name, cfg.partitions, cfg.priority_aging),
                          None)
        promoters, wakers = [], []
        for keys in partition_keys(cfg.name, cfg.partitions):
            wake = asyncio.Event()
            self._wakes.append(wake)
            # Separately supervised: a crashed promote loop restarts without touching the
            # wake-up wait (redis-py can swallow a cancel that lands while it connects).
            promoters.append(asyncio.create_task(supervised(
                f"dispatch partition {keys.partition}",
                partial(self._partition_loop, keys, wake), log)))
            wakers.append(asyncio.create_task(supervised(
                f"wake-up partition {keys.partition}", partial(self._wake_loop, keys, wake), log)))
            if cfg.partitions > 1:  # one partition hands nothing over: its scripts apply all
                wakers.append(asyncio.create_task(supervised(
                    f"outbox partition {keys.partition}", partial(self._forward_loop, keys),
                    log)))
        try:
            await asyncio.gather(*promoters)
        finally:
            await cancel_all([*promoters, *wakers], log)
            # ready for another run (in this or another event loop): fresh stop flag and wakes
            self._stopping, self._wakes = asyncio.Event(), []

    def _sleep_for(self, result: PromoteResult, clock: ServerClock | None = None) -> float:
        """Seconds until the next due job, to the µs of the server clock the script read.

        With ``clock`` (the partition's ``ServerClock``, given this call's sample first): until
        the local time at which the server clock reads the due time. Without: the server read
        its clock about half the round trip before the reply came back, so that half is already
        gone. Never negative; the script (due <= server time), not this sleep, keeps jobs from
        being promoted early: waking a little early costs one more call.
        """
        if result.moved >= self.batch:
            return 0.0
        if result.next_due < 0:
            return self.safety_tick
        if clock is not None and clock.known:
            gap = clock.local_time(result.next_due) - time.monotonic()
        else:
            gap = (result.next_due * 1000 - result.now_us) / 1e6 - result.round_trip / 2
        return min(self.safety_tick, max(gap, 0.0))

    async def _partition_loop(self, keys: PartitionKeys, wake: asyncio.Event) -> None:
        timer, clock = PreciseWait(), ServerClock()
        try:
            while not self._stopping.is_set():
                wake.clear()
                result = await self.promote_once(keys)
                clock.observe(result.now_us, result.sent, result.sent + result.round_trip)
                gap = self._sleep_for(result, clock)
                if result.schedule_at >= 0:  # docs/schedules.md: fired by the dispatchers
                    until = (result.schedule_at - result.now) / 1000
                    if until <= 0:
                        until = 0.0 if await self.fire_schedules(keys) else SCHEDULE_RETRY
                    gap = min(gap, until)
                if gap <= 0:
                    await asyncio.sleep(0)
                    continue
                await timer.wait(wake, gap)
        finally:
            timer.close()

    async def _wake_loop(self, keys: PartitionKeys, wake: asyncio.Event) -> None:
        blocking = async_client(self.config.url, self.safety_tick + self.config.socket_timeout)
        failures = 0
        try:
            while not self._stopping.is_set():
                try:
                    popped = await run_step_async(blocking, Command((
                        "BZPOPMIN", keys.wake, self.safety_tick)))
                    failures = 0
                except RETRYABLE as exc:
                    failures += 1
                    await pause_after_failure(failures, "wake-up wait", exc, log)
                    continue
                if popped:
                    wake.set()
        finally:
            await blocking.aclose()

    async def forward_once(self, keys: PartitionKeys, block_ms: int | None = None,
                           client: AsyncClient | None = None) -> int:
        """Forward what a partition's outbox holds (waiting up to ``block_ms`` for an entry);
        how many entries were read."""
        reply = await run_step_async(client or self.client, read_outbox_command(keys, block_ms))
        if not reply:
            return 0
        self.forwarded += await drive_async(self.client, forward_plan(
            keys, self.config.partitions, reply), None, "forward")
        return 1

    async def _forward_loop(self, keys: PartitionKeys) -> None:
        """Forward the partition's outbox while workflows are on there (field ``flow`` of its
        meta hash, looked at every safety tick until then); blocks on the outbox between."""
        blocking = async_client(self.config.url, self.safety_tick + self.config.socket_timeout)
        try:
            while not self._stopping.is_set():
                on = await run_step_async(self.client, Command(("HGET", keys.meta, "flow")))
                if not on:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), self.safety_tick)
                    continue
                await self.forward_once(keys, int(self.safety_tick * 1000), blocking)
        finally:
            await blocking.aclose()

    async def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
            self._lanes = {}
