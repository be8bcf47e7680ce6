"""The job methods of ``Queue`` and ``AsyncQueue``: cancel (with abort), reschedule, get,
stats and claim (docs/producer.md). Mixins, as ``operating.py``: each method validates through
and drives one plan with the face's ``_operate`` (never creates the queue).
"""

from __future__ import annotations

from typing import Any

from ..base.models import At, ClaimResult, Delay, JobInfo, QueueStats
from ..consume.core.control_plans import cancel_plan
from ..consume.core.upkeep_plans import claim_plan
from ..io.config import QueueConfig
from ..protocol.plan import Plan
from . import call_plans as plans


class JobMethods:
    """A job by id and the queue's counts, blocking (``Queue``)."""

    config: QueueConfig

    def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    def cancel(self, id: str, *, abort: bool = False) -> bool:
        """Remove a job in any state; False when there was none. ``abort=True`` also stops
        its running handler within about a second (an ``async def`` one is cancelled, a
        ``def`` one sees ``job.aborted``): the job ends ``cancelled``, its result's error and
        its event say ``aborted`` (docs/worker.md#abort)."""
        if abort:
            return bool(self._operate(cancel_plan(self.config, id, abort)))
        return bool(self._operate(plans.cancel_plan(self.config, id)))

    def reschedule(self, id: str, *, delay: Delay | None = None, at: At | None = None) -> bool:
        """Give a job a new due time; False when there is no such job."""
        return bool(self._operate(plans.reschedule_plan(self.config, id, delay, at)))

    def get(self, id: str) -> JobInfo | None:
        """Read a job by id, with its state; None when there is none."""
        result: JobInfo | None = self._operate(plans.get_plan(self.config, id))
        return result

    def stats(self) -> QueueStats:
        """Per-topic counts: delayed, ready, reserved, dead and lag."""
        result: QueueStats = self._operate(plans.stats_plan(self.config))
        return result

    def claim(
        self, group: str, *, topic: str | None = None, min_idle: Delay | None = None,
        to: str | None = None,
    ) -> ClaimResult:
        """Re-queue stuck deliveries of ``group`` (idle past ``min_idle`` or each job's ttr)."""
        result: ClaimResult = self._operate(
            claim_plan(self.config.name, self.config.partitions, group, topic, min_idle,
                       to))
        return result


class AsyncJobMethods:
    """A job by id and the queue's counts, asyncio (``AsyncQueue``)."""

    config: QueueConfig

    async def _operate(self, plan: Plan[Any]) -> Any:
        raise NotImplementedError

    async def cancel(self, id: str, *, abort: bool = False) -> bool:
        """Remove a job in any state (``abort=True``: stop its running handler too); see
        ``Queue.cancel``."""
        if abort:
            return bool(await self._operate(cancel_plan(self.config, id, abort)))
        return bool(await self._operate(plans.cancel_plan(self.config, id)))

    async def reschedule(
        self, id: str, *, delay: Delay | None = None, at: At | None = None
    ) -> bool:
        """Give a job a new due time; see ``Queue.reschedule``."""
        return bool(await self._operate(plans.reschedule_plan(self.config, id, delay, at)))

    async def get(self, id: str) -> JobInfo | None:
        """Read a job by id; see ``Queue.get``."""
        result: JobInfo | None = await self._operate(plans.get_plan(self.config, id))
        return result

    async def stats(self) -> QueueStats:
        """Per-topic counts; see ``Queue.stats``."""
        result: QueueStats = await self._operate(plans.stats_plan(self.config))
        return result

    async def claim(
        self, group: str, *, topic: str | None = None, min_idle: Delay | None = None,
        to: str | None = None,
    ) -> ClaimResult:
        """Re-queue stuck deliveries; see ``Queue.claim``."""
        result: ClaimResult = await self._operate(
            claim_plan(self.config.name, self.config.partitions, group, topic, min_idle,
                       to))
        return result
