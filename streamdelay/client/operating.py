"""The operator faces of ``Queue`` and ``AsyncQueue``: dead letters, the job listing, pause and
resume, topic limits and the record-layout migration (docs/operations.md).

Mixins, as ``scheduling.py`` and ``search_plans.py``: each method validates through and drives one
producer or operator plan with the face's ``_operate`` (reads and operator commands: never
creates the queue) or ``_run``. ``queue.py`` keeps the producer face (enqueue, cancel,
reschedule, get, stats, claim) and the connections.
"""

from __future__ import annotations

from typing import Any

from ..base import validation
from ..base.errors import WorkerNotFound
from ..base.fleet import DeadRetention, WorkerInfo
from ..base.models import DeadJob, Delay
from ..io.config import QueueConfig
from ..limits.limit_plans import limit_call, limits_plan, set_limit_plan
from ..limits.rates import Rate, TopicLimit
from ..protocol.fleet_records import command_plan, workers_plan
from ..protocol.layouts import SEEN_WITHIN_S, migrate_plan
from ..protocol.partitions import Retention, retention_plan
from ..protocol.plan import Plan
from . import call_plans as plans
from .listing import JobPage, jobs_plan
from .pause_plans import set_paused_plan


class OperatorMethods:
    """Dead letters, listing, pause, limits and migration, blocking (``Queue``)."""

    config: QueueConfig

    def _run(self, plan: Plan[Any], create: bool = True, checked: bool = False) -> Any:
        raise NotImplementedError

    def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    def dead_list(self, topic: str | None = None, limit: int = 100) -> list[DeadJob]:
        """The oldest dead-letter entries."""
        result: list[DeadJob] = self._operate(plans.dead_list_plan(self.config, topic, limit))
        return result

    def dead_replay(
        self, topic: str | None = None, id: str | None = None, delay: Delay | None = None
    ) -> int:
        """Put dead jobs back as new (attempts reset); returns how many."""
        return int(self._operate(plans.dead_replay_plan(self.config, topic, id, delay)))

    def dead_purge(self, topic: str | None = None, id: str | None = None) -> int:
        """Forget dead jobs; returns how many."""
        return int(self._operate(plans.dead_purge_plan(self.config, topic, id)))

    def dead_retention(self) -> DeadRetention:
        """The dead-letter retention in force, as stored in Redis (what the dispatchers apply,
        whatever this object was given; docs/reliability.md#dead-letter-retention). Read only."""
        return _retention(self._operate(retention_plan(self.config.name)))

    def jobs(self, state: str, topic: str | None = None, limit: int = 100,
             cursor: str | None = None) -> JobPage:
        """One page of the jobs in ``state`` (delayed, ready, reserved, dead, or waiting for
        their parents: docs/workflows.md): delayed by due time, waiting by the time they were
        enqueued, the others in stream order; pass ``page.cursor`` for the next page (None: the
        end). Every call is bounded, whatever the backlog (docs/operations.md#list-jobs)."""
        result: JobPage = self._operate(jobs_plan(self.config, state, topic, limit, cursor))
        return result

    def pause(self, topic: str) -> bool:
        """Within 1 s no worker starts a job of ``topic`` (running ones finish; due jobs still
        become ready). False when it was paused already. Kept in Redis until ``resume``."""
        return bool(self._operate(set_paused_plan(self.config, topic, True)))

    def resume(self, topic: str) -> bool:
        """Let workers start jobs of ``topic`` again; False when it was not paused."""
        return bool(self._operate(set_paused_plan(self.config, topic, False)))

    def limit(self, topic: str, rate: str | Rate | None = None,
              concurrency: int | None = None, *, key_rate: str | Rate | None = None,
              key_concurrency: int | None = None, clear: bool = False) -> bool:
        """Across all workers, start at most ``rate`` jobs of ``topic`` (``"100/s"``, ``"5/m"``)
        and run at most ``concurrency`` at once, and hold each fairness key of the topic to
        ``key_rate`` and ``key_concurrency`` (docs/limits.md#key-limits); ``clear=True``
        removes the topic's limit (a call with none is deprecated, see ``limit_call``). Each
        call sets the whole limit. False when it already was so (docs/limits.md)."""
        limit_call(topic, rate, concurrency, clear, key_rate, key_concurrency)
        return bool(self._run(set_limit_plan(self.config, topic, rate, concurrency, key_rate,
                                             key_concurrency)))

    def limits(self) -> dict[str, TopicLimit]:
        """The limited topics and their limits."""
        result: dict[str, TopicLimit] = self._operate(limits_plan(self.config))
        return result

    def migrate(self, *, seen_within: float = SEEN_WITHIN_S) -> list[int]:
        """Move every partition to record layout 2 (one copy of a body in Redis); idempotent.
        The layouts before, per partition. Refused (``LayoutError`` naming them) while a live
        process cannot read layout 2: a consumer active within ``seen_within`` seconds
        that keeps no fleet record counts as one (docs/operations.md#upgrading-a-running-queue)."""
        result: list[int] = self._operate(migrate_plan(self.config.name, self.config.partitions,
                                                       seen_within))
        return result

    def workers(self) -> list[WorkerInfo]:
        """The live consumers of the queue (workers, and pull/HTTP consumers), by name, as
        each last renewed its fleet entry (docs/operations.md#workers). Read only."""
        result: list[WorkerInfo] = self._operate(workers_plan(self.config.name))
        return result

    def worker(self, name: str) -> WorkerInfo | None:
        """The live consumer named ``name``; None when there is none (gone, or never was)."""
        return next((w for w in self.workers() if w.name == name), None)

    def quiet_worker(self, name: str) -> bool:
        """Within 2 s the worker process ``name`` takes no new jobs (of any topic) and finishes
        its running ones; its state turns ``quiet``, its ``/readyz`` 503. Until it ends: stop
        it then (``stop_worker`` or a signal). False when it already was asked; a
        ``WorkerNotFound`` when no live worker has that name (docs/operations.md#quiet-and-stop)."""
        return _commanded(name, self._operate(command_plan(
            self.config.name, validation.consumer(name, "name"), "quiet")))

    def stop_worker(self, name: str) -> bool:
        """Within 2 s the worker process ``name`` begins its graceful shutdown, as on SIGTERM
        (``streamdelay worker`` then exits 0). False when it already was asked; a
        ``WorkerNotFound`` when no live worker has that name."""
        return _commanded(name, self._operate(command_plan(
            self.config.name, validation.consumer(name, "name"), "stop")))


class AsyncOperatorMethods:
    """The same methods for ``AsyncQueue``, awaitable."""

    config: QueueConfig

    async def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        raise NotImplementedError

    async def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    async def dead_list(self, topic: str | None = None, limit: int = 100) -> list[DeadJob]:
        """The oldest dead-letter entries; see ``Queue.dead_list``."""
        result: list[DeadJob] = await self._operate(plans.dead_list_plan(self.config, topic, limit))
        return result

    async def dead_replay(
        self, topic: str | None = None, id: str | None = None, delay: Delay | None = None
    ) -> int:
        """Put dead jobs back; see ``Queue.dead_replay``."""
        return int(await self._operate(plans.dead_replay_plan(self.config, topic, id, delay)))

    async def dead_purge(self, topic: str | None = None, id: str | None = None) -> int:
        """Forget dead jobs; see ``Queue.dead_purge``."""
        return int(await self._operate(plans.dead_purge_plan(self.config, topic, id)))

    async def dead_retention(self) -> DeadRetention:
        """The dead-letter retention in force; see ``Queue.dead_retention``."""
        return _retention(await self._operate(retention_plan(self.config.name)))

    async def jobs(self, state: str, topic: str | None = None, limit: int = 100,
                   cursor: str | None = None) -> JobPage:
        """One page of the jobs in ``state``; see ``Queue.jobs``."""
        result: JobPage = await self._operate(
            jobs_plan(self.config, state, topic, limit, cursor))
        return result

    async def pause(self, topic: str) -> bool:
        """Stop workers starting jobs of ``topic``; see ``Queue.pause``."""
        return bool(await self._operate(set_paused_plan(self.config, topic, True)))

    async def resume(self, topic: str) -> bool:
        """Let workers start jobs of ``topic`` again; see ``Queue.resume``."""
        return bool(await self._operate(set_paused_plan(self.config, topic, False)))

    async def limit(self, topic: str, rate: str | Rate | None = None,
                    concurrency: int | None = None, *, key_rate: str | Rate | None = None,
                    key_concurrency: int | None = None, clear: bool = False) -> bool:
        """Set or clear a topic's limit; see ``Queue.limit``."""
        limit_call(topic, rate, concurrency, clear, key_rate, key_concurrency)
        return bool(await self._run(set_limit_plan(self.config, topic, rate, concurrency,
                                                   key_rate, key_concurrency)))

    async def limits(self) -> dict[str, TopicLimit]:
        """The limited topics and their limits; see ``Queue.limits``."""
        result: dict[str, TopicLimit] = await self._operate(limits_plan(self.config))
        return result

    async def migrate(self, *, seen_within: float = SEEN_WITHIN_S) -> list[int]:
        """Move every partition to record layout 2; see ``Queue.migrate``."""
        result: list[int] = await self._operate(
            migrate_plan(self.config.name, self.config.partitions, seen_within))
        return result

    async def workers(self) -> list[WorkerInfo]:
        """The live consumers of the queue; see ``Queue.workers``."""
        result: list[WorkerInfo] = await self._operate(workers_plan(self.config.name))
        return result

    async def worker(self, name: str) -> WorkerInfo | None:
        """The live consumer named ``name``, or None; see ``Queue.worker``."""
        return next((w for w in await self.workers() if w.name == name), None)

    async def quiet_worker(self, name: str) -> bool:
        """Quiet the worker process ``name``; see ``Queue.quiet_worker``."""
        return _commanded(name, await self._operate(
            command_plan(self.config.name, validation.consumer(name, "name"), "quiet")))

    async def stop_worker(self, name: str) -> bool:
        """Stop the worker process ``name`` gracefully; see ``Queue.stop_worker``."""
        return _commanded(name, await self._operate(
            command_plan(self.config.name, validation.consumer(name, "name"), "stop")))


def _commanded(name: str, reply: int) -> bool:
    """``commandWorker``'s reply as ``quiet_worker``/``stop_worker`` answer it."""
    if reply == -1:
        raise WorkerNotFound(f"name: no live worker named {name[:128]!r}", field="name")
    if reply == -2:
        raise WorkerNotFound(f"name: {name[:128]!r} is a pull/HTTP consumer, not a worker "
                             "process: it has nothing to quiet or stop", field="name")
    return reply == 1


def _retention(stored: Retention) -> DeadRetention:
    """``retention_plan``'s (ms, count) in seconds."""
    ttl_ms, most = stored
    return DeadRetention(None if ttl_ms is None else ttl_ms / 1000, most)
