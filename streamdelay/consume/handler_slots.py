"""Running handlers: the worker's slots and what happens to one delivery from its start to its
settlement (decode, the handler under its time limit, ack or ``failJob``).

``Slots`` is the state of the slots (the deliveries whose handlers run, the jobs they run, the
event that says one ended); ``HandlerRunner`` is its one writer. The read and take loops start
deliveries through the runner and read the slots; the shutdown (``worker.py``) waits for and
cancels the tasks it finds there. See docs/worker.md#handlers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..telemetry.job_logs import log_settled
from . import settle_calls as settling
from . import upkeep_loops as upkeep
from .acks import AckLoop
from .core.taking import Entry, entry_priority
from .delivery import (
    Delivery,
    Settlement,
    call_handler,
    open_delivery,
    outcome_of,
)
from .error_text import describe_error
from .processes import ProcessPool, ProcessSettings
from .upkeep_host import RunningHost

log = logging.getLogger("streamdelay.worker")


@dataclass
class Slots:
    """The handler slots of a worker (written by ``HandlerRunner`` only)."""

    concurrency: int
    # (partition, topic, entry id) -> the delivery whose handler runs (or waits to run) now
    inflight: dict[tuple[int, str, str], Delivery] = field(default_factory=dict)
    # (partition, job id) -> the delivery whose handler runs that job in this process
    running_jobs: dict[tuple[int, str], Delivery] = field(default_factory=dict)
    freed: asyncio.Event = field(default_factory=asyncio.Event)
    # the fewest slots a read fills: free slots below it count as none, so each read (a round
    # trip, the worker's CPU) brings that many jobs; 1 for threads, the children for processes
    batch: int = 1

    def free(self) -> int:
        """Handlers that can start now (a def handler's thread holds its slot): 0 while fewer
        than ``batch`` are free."""
        free = self.concurrency - len(self.inflight)
        return free if free >= self.batch else 0

    async def wait_freed(self) -> None:
        """Wait until a running delivery ends."""
        self.freed.clear()
        await self.freed.wait()

    def tasks(self) -> list[asyncio.Task[None]]:
        """The tasks of the deliveries in the slots."""
        return [d.task for d in self.inflight.values() if d.task is not None]


class HandlerRunner:
    """Starts a task per delivery in a free slot and settles it, whatever is raised."""

    def __init__(self, host: RunningHost, slots: Slots, acks: AckLoop,
                 processes: ProcessSettings | None = None) -> None:
        self.host = host
        self.slots = slots
        self.acks = acks
        self.executor: ThreadPoolExecutor | None = None  # def handlers' threads, per serve
        self.process_settings = processes  # executor="process" (docs/worker.md#executors)
        self.processes: ProcessPool | None = None  # its children, per serve

    def open(self) -> None:
        """A new serve: a fresh thread pool and slot event."""
        self.executor = ThreadPoolExecutor(self.slots.concurrency,
                                           thread_name_prefix="streamdelay")
        self.slots.freed = asyncio.Event()

    async def start_processes(self) -> None:
        """With the process executor: start its children (consume/processes/)."""
        if self.process_settings is not None:
            config = self.host.config
            self.processes = ProcessPool(self.host.handlers, self.process_settings,
                                         config.serializer, config.max_result_bytes,
                                         self.process_settings.abort_grace)
            await self.processes.start()

    def close(self) -> None:
        """The serve ends: the pool takes no new work (a def handler's thread still running
        ends on its own; ``Worker.run`` waits for it a moment); the children exit."""
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
        if self.processes is not None:
            self.processes.close()
            self.processes = None

    def start_entries(self, entries: Iterable[Entry]) -> int:
        """Start a handler task for each entry a read or a take gave; returns how many."""
        started = 0
        for entry in entries:
            started += self.start(Delivery(entry.partition, entry.topic, entry.entry_id,
                                           read_ms=entry.now_ms, fresh=entry.fresh),
                                  entry.fields)
        return started

    def start(self, delivery: Delivery, fields: dict[Any, Any] | None) -> bool:
        """Start a handler task for one delivery, unless this worker already holds it."""
        if delivery.key in self.slots.inflight:
            return False
        # the read and take loops sorted it by its route first (the core's sort)
        self.slots.inflight[delivery.key] = delivery
        delivery.task = asyncio.create_task(self._execute(delivery, fields))
        return True

    async def _execute(self, delivery: Delivery, fields: dict[Any, Any] | None) -> None:
        """Run one delivery and settle it, whatever is raised (docs/worker.md#handlers)."""
        try:
            settlement = await self._run(delivery, fields)
            if settlement is not None:
                await self._settle(delivery, settlement)
        except Exception as exc:  # a fault of the worker or of Redis: say so, never vanish
            log.exception("job %s (%s): could not settle entry %s (%s); it is re-queued "
                          "after its ttr", delivery.job_id, delivery.topic, delivery.entry_id,
                          exc, extra=settling.job_fields(self.host, delivery))
        finally:
            self.slots.inflight.pop(delivery.key, None)
            self.slots.freed.set()

    async def _run(self, delivery: Delivery, fields: dict[Any, Any] | None
                   ) -> Settlement | None:
        """Decode, run the handler and decide the settlement (None: nothing to settle)."""
        host = self.host
        handler = host.handlers[delivery.topic]
        try:
            job, backoff, settlement = open_delivery(delivery, fields, handler,
                                                     host.config.max_body_bytes)
        except Exception as exc:  # cannot be decoded, now or on a retry
            return Settlement("dead", error=describe_error(exc))
        if job is None:
            return settlement
        running_jobs = self.slots.running_jobs
        job_key = (delivery.partition, job.id)
        if job_key in running_jobs and not await self._after_earlier_run(job_key, delivery):
            return None
        running_jobs[job_key] = delivery
        # a staged topic's job: its lateness by priority too (docs/priorities.md)
        priority = entry_priority(fields) if job.topic in host.views.staged else None
        run = delivery.run = host.observer.started(job)  # its log lines and span
        host.reports.started(job.topic, host.group, job.due, priority, job.id)  # lateness
        started = time.monotonic()
        error: BaseException | None = None
        value: Any = None
        try:
            if self.processes is None:
                value = await call_handler(handler, job, host.handler_timeout, self.executor,
                                           delivery)
            else:  # in a child process, under a hard time limit
                value = await self.processes.run(job, delivery, host.handler_timeout)
        except asyncio.CancelledError as exc:
            error = exc
            raise
        except Exception as exc:  # the handler's failure is data, not a crash
            error = exc
        finally:
            if not delivery.thread_running:
                del running_jobs[job_key]
            if run is not None:
                run.ended(error)
        delivery.handler_s = elapsed = time.monotonic() - started
        try:
            return outcome_of(error, job, backoff or host.config.backoff, elapsed,
                              host.handler_timeout, value, host.config.serializer,
                              host.config.max_result_bytes)
        except Exception as exc:  # e.g. a retry delay that cannot be stored
            return Settlement("dead", error=f"settling failed: {describe_error(exc)}")

    async def _after_earlier_run(self, job_key: tuple[int, str], delivery: Delivery) -> bool:
        """Wait for an earlier run of the same job in this process to end; True when the
        delivery is still this worker's afterwards (docs/guarantees.md: never twice at once)."""
        running_jobs = self.slots.running_jobs
        while (earlier := running_jobs.get(job_key)) is not None:
            await earlier.finished()
            if running_jobs.get(job_key) is earlier:  # its task was cancelled
                del running_jobs[job_key]
        await upkeep.touch(self.host, [delivery], quiet=True)  # still ours after the wait?
        return not delivery.lost

    async def _settle(self, delivery: Delivery, settlement: Settlement) -> None:
        """Queue the acknowledgement of a handled delivery; retry or dead-letter a failed one."""
        host = self.host
        if settlement.kind == "ack":
            host.counts.add("handled")
            # a Drop is acknowledged, not a success (docs/design.md#observer)
            outcome = "dropped" if settlement.error else "handled"
            host.reports.settled(delivery.topic, host.group, outcome, job_id=delivery.job_id)
            if host.metrics is not None:
                host.metrics.timed(delivery, outcome)
            log_settled(delivery.run, "handled")
            self.acks.add(delivery.partition, delivery.topic, delivery.job_id,
                          delivery.entry_id, delivery.size, settlement.result,
                          delivery.started_ms, delivery.keep_done_ms)
            return
        if settlement.kind == "expired":  # its deadline passed before it started
            await settling.settle_expired(host, delivery)
            return
        await settling.settle_failure(host, delivery, settlement)
