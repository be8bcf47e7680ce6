"""The producer and operator API: ``Queue`` (blocking) and ``AsyncQueue`` (asyncio).

Both are thin: they validate through and drive the same plans from ``call_plans.py``. This
module holds the producer face (enqueue) and the connections; cancel, reschedule, get, stats and
claim come from ``job_methods.py``, the operator methods from ``operating.py``, the pull API from
``consume/reservation.py``, results, schedules, search and events from their own mixins.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar, overload

from ..base.errors import ConfigError
from ..base.models import (
    At,
    BackoffPolicy,
    Delay,
    EnqueueResult,
    JobSpec,
)
from ..base.tasks import B, R, Task
from ..consume.reservation import AsyncPull, SyncPull
from ..io.agreement import agree_partitions_async, agree_partitions_sync
from ..io.clients import AsyncClient, SyncClient, async_client, sync_client
from ..io.config import QueueConfig, mask_url, resolve_partitions, resolve_url
from ..io.lane import Lane
from ..io.runner import drive_async, drive_sync
from ..protocol.plan import Plan
from . import call_plans as plans
from .awaiting import AsyncResults, SyncResults
from .coalesce import EnqueueCoalescer
from .enqueue_one import on_lane, prepared_one_plan
from .enqueuing import (
    PreparedJob,
    enqueue_plan,
    enqueue_prepared_plan,
    prepare_values,
)
from .event_feed import AsyncEventMethods, EventMethods
from .flow_plans import after_job
from .job_methods import AsyncJobMethods, JobMethods
from .operating import AsyncOperatorMethods, OperatorMethods
from .scheduling import AsyncScheduleMethods, ScheduleMethods
from .search_plans import AsyncSearchMethods, SearchMethods
from .typed import AsyncEnqueued, Enqueued
from .workflow_methods import AsyncFlowMethods, FlowMethods

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..base.models import EnqueueOptions


def _config(name: str, url: str | None, options: dict[str, Any]) -> QueueConfig:
    known = {f.name for f in fields(QueueConfig)} - {"name", "url"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown queue option (known: "
                          f"{', '.join(sorted(known))})", field=unknown[0])
    partitions = resolve_partitions(options.pop("partitions", None))
    return QueueConfig(name=name, url=resolve_url(url), partitions=partitions, **options)


_Face = TypeVar("_Face", bound="_QueueFace")


class _QueueFace:
    """What both faces share: the configuration and the argument handling of each method."""

    config: QueueConfig

    @property
    def name(self) -> str:
        """The queue name."""
        return self.config.name

    def __repr__(self) -> str:
        """Name, partitions and URL with its password masked."""
        return (f"{type(self).__name__}({self.name!r}, url={mask_url(self.config.url)!r}, "
                f"partitions={self.config.partitions})")

    def _durable_view(self: _Face, replicas: int, replica_timeout: float | None,
                      local_fsync: bool | None) -> _Face:
        """A shallow copy with other durability settings (validated, naming the field)."""
        changes: dict[str, Any] = {"replicas": replicas}
        if replica_timeout is not None:
            changes["replica_timeout"] = replica_timeout
        if local_fsync is not None:
            changes["local_fsync"] = local_fsync
        view = copy.copy(self)
        view.config = dataclasses.replace(self.config, **changes)
        return view


class Queue(_QueueFace, JobMethods, SyncPull, SyncResults, OperatorMethods, ScheduleMethods,
            SearchMethods, EventMethods, FlowMethods):
    """A queue on Redis, blocking API. ``Queue("orders", url="redis://localhost:6379/0")``.

    Options (``ttr``, ``max_attempts``, ``backoff``, ``handler_timeout``, ``keep_done``,
    ``serializer``, ``max_body_bytes``, ``past_tolerance``, ``partitions``, ``retry_for``) are
    the queue's defaults; see ``QueueConfig``. ``replicas=N`` (with ``replica_timeout``
    seconds, and ``local_fsync``) makes every call that creates or changes a job answer only
    once N replicas have it, else raise ``NotDurable`` (docs/guarantees.md#durability).
    """

    def __init__(self, name: str, url: str | None = None, **options: Any) -> None:
        self.config = _config(name, url, options)
        self._client: SyncClient | None = None
        self._owns_client = True
        self._lane = Lane()  # enqueue's held connection (io/lane.py)
        self._agreed: QueueConfig | None = None  # the config whose partitions were agreed

    def with_replicas(self, replicas: int, replica_timeout: float | None = None,
                      local_fsync: bool | None = None) -> Queue:
        """The same queue on the same connection pool, with another durability setting for the
        calls made through it: ``queue.with_replicas(1).cancel("close-42")`` answers once one
        replica has the cancel, else raises ``NotDurable`` (docs/guarantees.md#durability).
        Closing the view leaves the pool to this queue."""
        view = self._durable_view(replicas, replica_timeout, local_fsync)
        view._client, view._owns_client = self.client, False
        return view

    @property
    def client(self) -> SyncClient:
        """The underlying redis-py client (``RedisCluster`` on a cluster; created on first use)."""
        if self._client is None:
            self._client = sync_client(self.config.url, self.config.socket_timeout,
                                       self.config.max_connections)
            self._owns_client = True
        return self._client

    def _run(self, plan: Plan[Any], create: bool = True, checked: bool = False,
             lane: bool = True) -> Any:
        """Drive ``plan``; ``create=False`` (reads, operator commands) never writes the queue's
        partition count and raises ``NoSuchQueue`` when it is absent (docs/operations.md);
        ``checked``: the caller validated the input already (``enqueue``; its single script
        calls go on the lane unless ``lane=False``)."""
        cfg = self.config
        if not checked:
            plan = plans.validated(plan)  # bad input is refused before Redis is touched
        agree_partitions_sync(self.client, cfg.url, cfg.name, cfg.partitions, cfg.retry_for,
                              create, cfg.events_bound, cfg.retention)
        if cfg.durability is None:  # agreed (once per process): enqueue may skip this method
            self._agreed = cfg
        return drive_sync(self.client, plan, cfg.retry_for, cfg.durability,
                          self._lane if checked and lane else None)

    def _operate(self, plan: Plan[Any]) -> Any:
        """Drive a read or operator plan: it never creates the queue (``NoSuchQueue``)."""
        return self._run(plan, create=False)

    @overload  # a typed task: its body type only; the reply reads its typed result
    def enqueue(self, topic: Task[B, R], body: B, **options: Unpack[EnqueueOptions]
                ) -> Enqueued[R]: ...
    @overload
    def enqueue(self, topic: str, body: Any = None, **options: Unpack[EnqueueOptions]
                ) -> EnqueueResult: ...
    def enqueue(
        self,
        topic: str | Task[Any, Any],
        body: Any = None,
        *,
        delay: Delay | None = None,
        at: At | None = None,
        id: str | None = None,
        ttr: Delay | None = None,
        max_attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        headers: dict[str, str] | None = None,
        replace: bool = False,
        max_wait: Delay | None = None,
        keep_result: Delay | None = None,
        priority: int | None = None,
        key: str | None = None,
        expires: Delay | None = None,
        after: Sequence[str] | None = None,
        on_parent_failure: str = "dead",
        keep_done: Delay | None = None,
    ) -> EnqueueResult:
        """Schedule one job ``delay`` seconds from now (server clock) or ``at`` a time.

        ``replace=True`` replaces a job of the same id (body, options, due time);
        ``max_wait`` with it: the due time never moves past the first enqueue of the id plus
        ``max_wait`` (debounce, docs/producer.md#debounce). ``keep_result``: seconds its
        result is kept once it ended (default: the queue's; docs/results.md). ``keep_done``:
        seconds it stays a ``done`` tombstone once acknowledged (its id taken; 0: forgotten at
        once), over the worker's queue's ``keep_done`` (docs/producer.md#keep_done).


        ``priority`` (0-9, default 5): higher starts first among ready jobs of its topic;
        ``key``: a fairness key (the job's id becomes ``{key}<id>``: use the returned id);
        ``expires``: seconds after its due time past which it never starts
        (docs/producer.md#priorities-keys-and-expiry).

        ``after``: the ids of jobs it waits for (state ``waiting`` until each succeeded, then
        due after its delay); ``on_parent_failure`` ``"dead"`` or ``"run"``
        (docs/workflows.md).

        ``topic`` may be a typed task (``sd.task``): the reply is then an ``sd.Enqueued``
        whose ``result(timeout=)`` decodes the value (docs/typed-tasks.md)."""
        job = prepare_values(self.config, topic, body, delay, at, id, ttr, max_attempts, backoff,
                             headers, replace, max_wait, keep_result, priority, key,
                             expires, keep_done)  # bad input raises here, before any I/O
        if after is not None:
            result = self._run_flow([after_job(self.config, job, after, on_parent_failure)])[0]
        elif self._agreed is self.config and not job.opts and job.args[6] == "0":
            # a plain job on an agreed queue without replicas: its call on the lane, no plan
            # driven unless the id is taken or the lane steps aside (enqueue_one.on_lane)
            done, lane = on_lane(self._lane, self._client, self.config, job)
            result = (done if isinstance(done, EnqueueResult)
                      else self._run(done, checked=True, lane=lane))
        else:
            result = self._run(prepared_one_plan(self.config, job), checked=True)
        if type(topic) is not str and isinstance(topic, Task):
            return Enqueued(result, self, topic)
        return result

    def enqueue_many(self, specs: Iterable[JobSpec]) -> list[EnqueueResult]:
        """Schedule many jobs in one round trip; results are in the order of ``specs``."""
        result: list[EnqueueResult] = self._run(enqueue_plan(self.config, specs))
        return result

    def close(self) -> None:
        """Close the connection pools (a ``with_replicas`` view leaves the shared one alone)."""
        self._close_pull()
        if self._client is not None and self._owns_client:
            self._client.close()
        self._client, self._agreed = None, None  # a next enqueue goes through _run first

    def __enter__(self) -> Queue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncQueue(_QueueFace, AsyncJobMethods, AsyncPull, AsyncResults, AsyncOperatorMethods,
                 AsyncScheduleMethods, AsyncSearchMethods, AsyncEventMethods, AsyncFlowMethods):
    """The same queue with awaitable methods, for asyncio producers.

    Concurrent ``enqueue`` calls are coalesced: while one ``enqueueJobs`` call of a partition is
    in flight, the next calls wait and then go out together (see ``coalesce.py`` and
    docs/producer.md).
    """

    def __init__(self, name: str, url: str | None = None, **options: Any) -> None:
        self.config = _config(name, url, options)
        self._client: AsyncClient | None = None
        self._owns_client = True
        self._coalescer = EnqueueCoalescer(self.config, lambda: self.client)

    def with_replicas(self, replicas: int, replica_timeout: float | None = None,
                      local_fsync: bool | None = None) -> AsyncQueue:
        """The same queue on the same connection pool with another durability setting; see
        ``Queue.with_replicas`` (its enqueue calls are coalesced among themselves)."""
        view = self._durable_view(replicas, replica_timeout, local_fsync)
        view._client, view._owns_client = self.client, False
        view._coalescer = EnqueueCoalescer(view.config, lambda: view.client)
        return view

    @property
    def client(self) -> AsyncClient:
        """The underlying redis-py asyncio client (created on first use)."""
        if self._client is None:
            self._client = async_client(self.config.url, self.config.socket_timeout,
                                        self.config.max_connections)
            self._owns_client = True
        return self._client

    async def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        """Drive ``plan``; see ``Queue._run`` for ``create``."""
        cfg = self.config
        plan = plans.validated(plan)  # bad input is refused before Redis is touched
        await agree_partitions_async(self.client, cfg.url, cfg.name, cfg.partitions,
                                     cfg.retry_for, create, cfg.events_bound, cfg.retention)
        return await drive_async(self.client, plan, cfg.retry_for, durability=cfg.durability)

    async def _operate(self, plan: Plan[Any]) -> Any:
        """Drive a read or operator plan: it never creates the queue (``NoSuchQueue``)."""
        return await self._run(plan, create=False)

    @overload  # a typed task: see Queue.enqueue
    async def enqueue(self, topic: Task[B, R], body: B, **options: Unpack[EnqueueOptions]
                      ) -> AsyncEnqueued[R]: ...
    @overload
    async def enqueue(self, topic: str, body: Any = None, **options: Unpack[EnqueueOptions]
                      ) -> EnqueueResult: ...
    async def enqueue(
        self,
        topic: str | Task[Any, Any],
        body: Any = None,
        *,
        delay: Delay | None = None,
        at: At | None = None,
        id: str | None = None,
        ttr: Delay | None = None,
        max_attempts: int | None = None,
        backoff: BackoffPolicy | None = None,
        headers: dict[str, str] | None = None,
        replace: bool = False,
        max_wait: Delay | None = None,
        keep_result: Delay | None = None,
        priority: int | None = None,
        key: str | None = None,
        expires: Delay | None = None,
        after: Sequence[str] | None = None,
        on_parent_failure: str = "dead",
        keep_done: Delay | None = None,
    ) -> EnqueueResult:
        """Schedule one job; see ``Queue.enqueue``.

        Bad input raises at once. Calls made while another of the same partition is in flight
        are sent together in the next round trip; each gets its own result or error.
        """
        job = prepare_values(self.config, topic, body, delay, at, id, ttr, max_attempts,
                             backoff, headers, replace, max_wait, keep_result, priority,
                             key, expires, keep_done)
        if after is not None:
            done = await self._run_flow([after_job(self.config, job, after, on_parent_failure)])
            result = done[0]
        else:
            result = await self._coalescer.enqueue(job)
        if type(topic) is not str and isinstance(topic, Task):
            return AsyncEnqueued(result, self, topic)
        return result

    async def enqueue_many(self, specs: Iterable[JobSpec]) -> list[EnqueueResult]:
        """Schedule many jobs in one round trip; see ``Queue.enqueue_many``."""
        result: list[EnqueueResult] = await self._run(enqueue_plan(self.config, specs))
        return result

    async def enqueue_prepared(self, jobs: Sequence[PreparedJob]) -> list[EnqueueResult]:
        """``enqueue_many`` of jobs validated by ``client.enqueuing.prepare_values`` (the
        HTTP batch route: no ``JobSpec`` built per job)."""
        result: list[EnqueueResult] = await self._run(enqueue_prepared_plan(self.config, jobs))
        return result

    async def close(self) -> None:
        """Wait for the enqueue calls in flight, then close the connection pool (a
        ``with_replicas`` view leaves it to its queue)."""
        await self._coalescer.wait_idle()
        await self._close_pull()
        if self._client is not None and self._owns_client:
            await self._client.aclose()
        self._client = None

    async def __aenter__(self) -> AsyncQueue:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
