"""The schedule methods of ``Queue`` and ``AsyncQueue`` (docs/schedules.md).

Thin: validation and plans live in ``streamdelay.dispatch``; these mixins only drive them
through each face's ``_run`` (the same runner and retry policy as ``enqueue``).
"""

from __future__ import annotations

from typing import Any

from ..base.models import Delay
from ..dispatch import schedule_plans
from ..dispatch.schedule_spec import Missed, Schedule, define
from ..io.config import QueueConfig
from ..protocol.plan import Plan


class _ScheduleArgs:
    config: QueueConfig  # the face's queue (the plans take its spec)

    def _put(self, name: str, topic: str, body: Any, cron: str | None, every: Delay | None,
             tz: str, ttr: Delay | None, max_attempts: int | None, missed: Missed,
             jitter: Delay) -> Plan[bool]:
        cfg = self.config
        sdef = define(name, topic, body, cron=cron, every=every, tz=tz,
                      ttr=cfg.ttr if ttr is None else ttr,
                      max_attempts=cfg.max_attempts if max_attempts is None else max_attempts,
                      missed=missed, jitter=jitter, serializer=cfg.serializer,
                      max_body_bytes=cfg.max_body_bytes)
        return schedule_plans.put_plan(cfg.name, cfg.partitions, sdef)


class ScheduleMethods(_ScheduleArgs):
    """``schedule``, ``unschedule``, ``schedules`` and friends, blocking."""

    def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        raise NotImplementedError

    def schedule(self, name: str, topic: str, body: Any = None, *, cron: str | None = None,
                 every: Delay | None = None, tz: str = "UTC", ttr: Delay | None = None,
                 max_attempts: int | None = None, missed: Missed = "skip",
                 jitter: Delay = 0) -> bool:
        """Declare a recurring job: a job on ``topic`` with ``body`` at every tick of ``cron``
        (in time zone ``tz``) or ``every`` seconds; idempotent. True when it was created or
        its spec changed, False when the same spec was already there (docs/schedules.md)."""
        changed: bool = self._run(self._put(name, topic, body, cron, every, tz, ttr,
                                            max_attempts, missed, jitter))
        return changed

    def unschedule(self, name: str) -> bool:
        """Remove a schedule and cancel its ticks not yet due; False when there was none."""
        found: bool = self._run(schedule_plans.drop_plan(self.config.name,
                                                         self.config.partitions, name), False)
        return found

    def schedules(self) -> list[Schedule]:
        """Every schedule of the queue, by name."""
        found: list[Schedule] = self._run(schedule_plans.list_plan(
            self.config.name, self.config.partitions), False)
        return found

    def pause_schedule(self, name: str, paused: bool = True) -> bool:
        """Pause a schedule (``paused=False``: resume it); False when it already was so."""
        changed: bool = self._run(schedule_plans.pause_plan(
            self.config.name, self.config.partitions, name, paused), False)
        return changed

    def next_ticks(self, name: str, count: int = 5) -> list[int]:
        """The next ``count`` ticks of a schedule, epoch ms (server clock); [] while paused."""
        ticks: list[int] = self._run(schedule_plans.next_plan(
            self.config.name, self.config.partitions, name, count), False)
        return ticks


class AsyncScheduleMethods(_ScheduleArgs):
    """The same methods for ``AsyncQueue``, awaitable."""

    async def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        raise NotImplementedError

    async def schedule(self, name: str, topic: str, body: Any = None, *,
                       cron: str | None = None, every: Delay | None = None, tz: str = "UTC",
                       ttr: Delay | None = None, max_attempts: int | None = None,
                       missed: Missed = "skip", jitter: Delay = 0) -> bool:
        """Declare a recurring job; see ``Queue.schedule``."""
        changed: bool = await self._run(self._put(name, topic, body, cron, every, tz, ttr,
                                                  max_attempts, missed, jitter))
        return changed

    async def unschedule(self, name: str) -> bool:
        """Remove a schedule; see ``Queue.unschedule``."""
        found: bool = await self._run(schedule_plans.drop_plan(
            self.config.name, self.config.partitions, name), False)
        return found

    async def schedules(self) -> list[Schedule]:
        """Every schedule of the queue; see ``Queue.schedules``."""
        found: list[Schedule] = await self._run(schedule_plans.list_plan(
            self.config.name, self.config.partitions), False)
        return found

    async def pause_schedule(self, name: str, paused: bool = True) -> bool:
        """Pause or resume a schedule; see ``Queue.pause_schedule``."""
        changed: bool = await self._run(schedule_plans.pause_plan(
            self.config.name, self.config.partitions, name, paused), False)
        return changed

    async def next_ticks(self, name: str, count: int = 5) -> list[int]:
        """The next ticks of a schedule; see ``Queue.next_ticks``."""
        ticks: list[int] = await self._run(schedule_plans.next_plan(
            self.config.name, self.config.partitions, name, count), False)
        return ticks
