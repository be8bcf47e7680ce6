"""The worker: reads due jobs of its topics from their streams and runs the handlers.

One asyncio loop per process: a blocking reader per partition (its own connection, socket timeout
above the block time), handler tasks bounded by ``concurrency`` (``running.py``), batched
acknowledgements (``acks.py``), and the upkeep loops from ``upkeep.py`` (heartbeats, reclaiming
silent consumers' jobs, idle watch). An embedded ``Dispatcher`` runs unless ``dispatch=False``.
This module is the public class: registration, serving and the graceful shutdown; each loop it
starts owns the state it changes (docs/design.md, "The worker's state").
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import os
import signal
import time
from collections.abc import Coroutine, Iterable
from functools import partial
from typing import Any, TypeVar

from ..base import validation
from ..base.errors import ConfigError
from ..dispatch.aging import aging_plan
from ..dispatch.dispatcher import Dispatcher
from ..io.agreement import agree_partitions_async
from ..io.clients import AsyncClient, async_client
from ..io.config import QueueConfig, mask_url
from ..io.loop_supervision import OwnedTasks, cancel_all, supervised_task, threads_finish
from ..io.runner import call_with_retry, drive_async
from ..protocol.keys import PartitionKeys, partition_keys
from ..protocol.layouts import FLEET_EVERY_S
from ..protocol.plan import Plan, Step
from ..telemetry.job_logs import JobObserver, observe
from ..telemetry.observer import ConsumerObserver
from ..telemetry.worker_metrics import metrics_for_worker
from . import limiting, reading
from . import paused_topics as pausing
from . import settle_calls as settling
from . import upkeep_loops as upkeep
from .acks import AckLoop, PendingAcks
from .core.cadence import site_of
from .core.constants import DEFAULT_GROUP, PRUNE_IDLE_S, default_consumer_name
from .core.consumer_core import ConsumerCore
from .core.leasing import LeaseBook
from .core.taking import Entry
from .core.upkeep_plans import register_plan
from .counts import Counts
from .delivery import Delivery, Handler
from .fleet_self import FleetSelf
from .handler_slots import HandlerRunner, Slots
from .handler_table import HandlerTable
from .health import HealthServer
from .liveness import Liveness
from .processes import executor_settings
from .topic_views import TopicViews

log = logging.getLogger("streamdelay.worker")
T = TypeVar("T")
FINAL_FLUSH_TIMEOUT = 5.0
_UNSET: Any = object()


class Worker(HandlerTable):
    """Runs handlers for the topics of one queue as a member of one consumer group."""

    def __init__(
        self,
        queue: Any,
        *,
        group: str = DEFAULT_GROUP,
        concurrency: int = 32,
        consumer: str | None = None,
        dispatch: bool = True,
        handler_timeout: float | None = _UNSET,
        block: float = 1.0,
        reclaim_interval: float = 1.0,
        shutdown_grace: float = 30.0,
        metrics_port: int | None = None,
        health_port: int | None = None,
        executor: str = "thread",
        processes: int | None = None,
        max_jobs_per_child: int | None = None,
        abort_grace: float = 5.0,
    ) -> None:
        config = queue if isinstance(queue, QueueConfig) else getattr(queue, "config", None)
        if not isinstance(config, QueueConfig):
            raise ConfigError("queue: pass a streamdelay Queue, AsyncQueue or QueueConfig",
                              field="queue")
        self.config = config
        self.group = validation.group(group)
        self.concurrency = validation.positive_int(concurrency, "concurrency", 100_000)
        self.consumer = validation.consumer(default_consumer_name() if consumer is None
                                            else consumer)
        self.dispatch = bool(dispatch)
        timeout = config.handler_timeout if handler_timeout is _UNSET else handler_timeout
        if timeout is not None:
            validation.seconds(timeout, "handler_timeout", minimum=0.001)
        self.handler_timeout: float | None = timeout
        self.block = validation.seconds(block, "block", minimum=0.01, maximum=60)
        self.reclaim_interval = validation.seconds(reclaim_interval, "reclaim_interval",
                                                   minimum=0.05, maximum=3600)
        self.shutdown_grace = validation.seconds(shutdown_grace, "shutdown_grace")
        # executor="process": handlers in child processes, hard limits (docs/worker.md#executors)
        in_processes = executor_settings(executor, processes, max_jobs_per_child, abort_grace)
        self.executor = executor
        self.processes = None if in_processes is None else in_processes.processes
        self.max_jobs_per_child = max_jobs_per_child
        self.abort_grace = abort_grace
        # consumers of the group that own nothing and were silent prune_idle seconds are
        # removed, checked every prune_every seconds (docs/worker.md)
        self.prune_idle = PRUNE_IDLE_S
        self.prune_every = upkeep.PRUNE_EVERY
        self.fleet_every = FLEET_EVERY_S  # renewal of the fleet entry (docs/operations.md#workers)
        # the heartbeat and reclaim loops' view of the contact with Redis: after a failed call
        # every running job is touched before any reclaim (docs/guarantees.md#never-twice-at-once)
        self.liveness = Liveness(self.consumer, self.reclaim_interval)
        self.handlers: dict[str, Handler] = {}
        self.counts = Counts()  # the settling, hand-back and reclaim loops add to it
        self.partitions: tuple[PartitionKeys, ...] = partition_keys(config.name, config.partitions)
        self.leases = LeaseBook()  # deliveries holding a lease in slot 0 (consume/core/leasing.py)
        self.views = TopicViews()  # paused, limited, staged topics (the watches write it)
        # the consumer core (consume/core/consumer_core.py): the routes are the views, their
        # sort, the process's upkeep cadence; the worker adds slots, the runner, its loops
        self.core = ConsumerCore(site_of(config.url, config.name), routes=self.views)
        # each state below is written by its owner only: the ack loop, the handler runner,
        # the hand-back tasks' set; this class reads them and awaits their tasks at shutdown
        self._ack_loop = AckLoop(partial(settling.send_acks, self))
        self._slots = (Slots(self.concurrency) if in_processes is None else
                       Slots(in_processes.slots, batch=in_processes.read_batch))
        self._runner = HandlerRunner(self, self._slots, self._ack_loop, in_processes)
        self._tasks = OwnedTasks()  # hand-backs (consume/paused_topics.py)
        self._stopping = asyncio.Event()
        self._signals = 0
        self._registered = False  # /readyz: the start-up calls answered
        self._client: AsyncClient | None = None
        self._dispatcher: Dispatcher | None = None
        self.metrics_port = metrics_port
        self.metrics = metrics_for_worker(config.name, self.group, metrics_port)
        self.observer = JobObserver(config.name, self.group)  # logs and spans (telemetry/)
        # starts and settles: the dashboard's lateness and throughput, the metrics
        # (docs/design.md#observer); the debug lines are the JobObserver's, with the run's fields
        self.reports = ConsumerObserver(config.name, self.consumer, log_lines=False)
        if self.metrics is not None:
            self.reports.reporters.append(self.metrics.reporter())
        self._fleet_self = FleetSelf(self.group, self.concurrency)
        self.health_port = (None if health_port is None
                            else validation.positive_int(health_port, "health_port", 65535))
        self._health: HealthServer | None = None

    def __repr__(self) -> str:
        """Queue, group and consumer; the URL with its password masked."""
        return (f"Worker(queue={self.config.name!r}, group={self.group!r}, "
                f"consumer={self.consumer!r}, url={mask_url(self.config.url)!r})")

    def replace(self, *, config: QueueConfig | None = None, **changes: Any) -> Worker:
        """A new worker of the same class and handlers: every constructor argument and tuning
        attribute as here, except ``changes`` (validated as by the constructor)."""
        params = [p for p in inspect.signature(Worker.__init__).parameters if p not in
                  ("self", "queue")]
        options = {name: getattr(self, name) for name in params}
        options.update(changes)
        rebuilt = type(self)(self.config if config is None else config, **options)
        rebuilt.handlers = dict(self.handlers)
        rebuilt.prune_idle, rebuilt.prune_every = self.prune_idle, self.prune_every
        rebuilt.fleet_every = self.fleet_every
        return rebuilt

    @property
    def acks_pending(self) -> bool:
        """True while finished jobs wait to be acknowledged (the next ack flush sends them)."""
        return bool(self._ack_loop.pending)

    @property
    def acks(self) -> PendingAcks:
        """The acknowledgements not written yet (the ack loop's queue)."""
        return self._ack_loop.pending

    @property
    def inflight(self) -> dict[tuple[int, str, str], Delivery]:
        """The deliveries whose handlers run now, by (partition, topic, entry id)."""
        return self._slots.inflight

    @property
    def running_jobs(self) -> dict[tuple[int, str], Delivery]:
        """(partition, job id) -> the delivery whose handler runs that job in this process."""
        return self._slots.running_jobs

    @property
    def client(self) -> AsyncClient:
        """The command connection pool of this worker."""
        if self._client is None:
            self._client = async_client(self.config.url, self.config.socket_timeout)
        return self._client

    async def call(self, step: Step, what: str) -> Any:
        """Run one step under the retry policy (forever: workers ride out outages)."""
        return await call_with_retry(self.client, step, None, what)

    async def run_plan(self, plan: Plan[T], what: str) -> T:
        """Run a consumer plan under the retry policy (forever, as ``call``)."""
        return await drive_async(self.client, plan, None, what)

    def fleet_info(self) -> str:
        """What it is and runs now, as its fleet entry says (docs/operations.md#workers)."""
        return self._fleet_self.blob(self.topics, self.running_jobs.values(), self.stopping,
                                     bool(self.views.quiet))

    @property
    def fleet_started_ms(self) -> int:
        """When this process started (epoch ms): ties a quiet or stop command to it."""
        return self._fleet_self.started_ms

    @property
    def ready(self) -> bool:
        """``/readyz``: registered, not quiet nor stopping, and the last call to Redis
        answered (docs/operations.md#probes)."""
        return (self._registered and not self.stopping and not self.views.quiet
                and not self.liveness.down)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a background task this worker owns: awaited at shutdown."""
        self._tasks.spawn(work)

    # --- running ------------------------------------------------------------------------

    def run(self, *, until_idle: bool = False) -> None:
        """Block serving jobs; SIGINT/SIGTERM stop gracefully, a second signal at once."""
        gc.freeze()  # start-up objects leave the GC's view: no 15-20 ms gen-2 pauses (lateness)
        asyncio.run(self.serve(until_idle=until_idle, handle_signals=True))
        executor = self._runner.executor
        finished = executor is None or threads_finish(executor, 1.0)
        if self.running_jobs:  # def handlers cancelled at shutdown: their threads outlived it
            asyncio.run(upkeep.release_later(self, list(self.running_jobs.values())))
        if not finished:
            log.warning("a def handler still runs after the grace period; exiting the process "
                        "(its job is handed back, due %gs from now)", upkeep.HANDBACK_DELAY)
            os._exit(0)

    def stop(self) -> None:
        """Ask the worker to stop gracefully (call from the worker's event loop)."""
        self._stopping.set()
        self.views.wake()  # idle take loops (consume/limiting.py) see the stop at once
        if self._dispatcher is not None:
            self._dispatcher.stop()

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals == 1:
            log.info("stopping: finishing running jobs (grace %.1fs)", self.shutdown_grace)
            self.stop()
        else:
            log.warning("second signal: exiting now; unfinished jobs are redelivered after ttr")
            os._exit(1)

    async def serve(self, *, until_idle: bool = False, handle_signals: bool = False) -> None:
        """Serve jobs until ``stop()`` (or, with ``until_idle``, until nothing is left to do)."""
        if not self.handlers:
            raise ConfigError("handler: register at least one handler before serving",
                              field="handler")
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self._on_signal)
        self._runner.open()
        await self._runner.start_processes()  # executor="process": its children load first
        self._ack_loop.renew()
        if not self._stopping.is_set():
            self._stopping = asyncio.Event()
        if not await self._register_unless_stopped():
            if handle_signals:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
            return
        await pausing.load(self)  # a paused topic stays paused across restarts
        self.views.renew()
        await limiting.load(self)  # a limited topic is never read past its limit
        upkeep_tasks = self._start_upkeep(until_idle)
        background = [supervised_task("read", partial(reading.read_loop, self, k))
                      for k in self.partitions]
        background += [supervised_task("take", partial(limiting.take_loop, self, k, topic))
                       for k in self.partitions for topic in self.topics]
        try:
            await self._stopping.wait()
        finally:
            await self._shutdown(background, upkeep_tasks)
            if handle_signals:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

    def _start_upkeep(self, until_idle: bool) -> list[asyncio.Task[None]]:
        """Start the metrics (first: a taken port fails here), the ack, heartbeat and reclaim
        loops, the idle watch and the dispatcher (those three when asked for)."""
        dispatcher = Dispatcher(self.config, client=self.client) if self.dispatch else None
        if self.metrics is not None:  # docs/operations.md#metrics
            self.metrics.start(self.config, dispatcher)
        if self.health_port is not None:  # docs/operations.md#probes
            self._health = HealthServer(asyncio.get_running_loop(), lambda: self.ready,
                                        self.health_port)
        tasks = [supervised_task("ack", self._ack_loop.run),
                 supervised_task("heartbeat", partial(upkeep.heartbeat_loop, self)),
                 supervised_task("reclaim", partial(upkeep.reclaim_loop, self)),
                 supervised_task("paused", partial(pausing.watch, self)),
                 supervised_task("limits", partial(limiting.watch, self)),
                 supervised_task("lateness", partial(self.reports.run, self.client)),
                 supervised_task("fleet", partial(upkeep.fleet_loop, self))]
        if until_idle:
            tasks.append(asyncio.create_task(upkeep.idle_watch(self)))
        if dispatcher is not None:
            self._dispatcher = dispatcher
            tasks.append(supervised_task("dispatch", dispatcher.run))
        return tasks

    async def _register_unless_stopped(self) -> bool:
        """Register, unless ``stop()`` comes first (e.g. SIGTERM while Redis is unreachable)."""
        registering = asyncio.ensure_future(self.register())
        stopped = asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait([registering, stopped], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if registering.done():
            registering.result()
            return True
        registering.cancel()
        await asyncio.gather(registering, stopped, return_exceptions=True)
        await self.client.aclose()
        return False

    async def register(self) -> None:
        """Bind this worker's topics to its group and create the groups (idempotent)."""
        cfg = self.config
        await agree_partitions_async(self.client, cfg.url, cfg.name, cfg.partitions, None,
                                     events=cfg.events_bound,  # docs/events.md#the-switch
                                     retention=cfg.retention)
        await self.run_plan(aging_plan(cfg.name, cfg.partitions, cfg.priority_aging), "aging")
        await upkeep.join_fleet(self)  # before the first read: migrate sees a live reader
        self.observer = await observe(cfg.name, self.group, self.client)  # clock, tracing
        self.reports.clock_offset_ms = self.observer.clock_offset_ms
        await self.run_plan(register_plan(cfg.name, cfg.partitions, self.group, self.handlers),
                            "register")
        self._registered = True

    async def _shutdown(self, readers: list[asyncio.Task[Any]], others: list[asyncio.Task[Any]]
                        ) -> None:
        self.stop()
        deadline = time.monotonic() + self.shutdown_grace  # the grace runs from the stop request
        await upkeep.say_state(self)
        await asyncio.wait(readers, timeout=self.block + 1.0)  # a read in flight lands first
        await cancel_all(readers)
        running = self._slots.tasks()
        if running:
            await asyncio.wait(running, timeout=max(0.0, deadline - time.monotonic()))
        await upkeep.release_unfinished(self)
        await self._tasks.wait(FINAL_FLUSH_TIMEOUT)  # hand-backs land before the pool closes
        self._ack_loop.wake()
        await cancel_all([*readers, *others])
        try:  # bounded: a stop during an outage must not wait for Redis forever
            await asyncio.wait_for(self._ack_loop.flush(), FINAL_FLUSH_TIMEOUT)
        except (asyncio.TimeoutError, OSError) as exc:
            log.warning("could not acknowledge finished jobs at shutdown (%s); they are "
                        "redelivered after their ttr", exc)
        self._runner.close()
        await self.client.aclose()
        if self.metrics is not None:
            self.metrics.stop()
        if self._health is not None:
            self._health.stop()
            self._health = None
        self._registered = False
        self._client = None  # a later call (release_later) opens a pool in its own loop

    # --- reading ------------------------------------------------------------------------

    @property
    def paused(self) -> frozenset[str]:
        """The topics paused now, as this worker last read them (docs/operations.md)."""
        return self.views.paused

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stopping.is_set()

    async def slot_freed(self) -> None:
        """Wait until a running delivery ends."""
        await self._slots.wait_freed()

    def free_slots(self) -> int:
        """Handlers this worker can start now (a def handler's thread holds its slot)."""
        return self._slots.free()

    def start_entries(self, entries: Iterable[Entry]) -> int:
        """Start a handler task for each entry a read or a take gave; returns how many."""
        return self._runner.start_entries(entries)

    def start(self, delivery: Delivery, fields: dict[Any, Any] | None) -> bool:
        """Start a handler task for one delivery, unless this worker already holds it."""
        return self._runner.start(delivery, fields)
