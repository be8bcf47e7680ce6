"""The workflow methods of ``Queue`` and ``AsyncQueue`` (docs/workflows.md): ``chain``,
``batch``, ``batch_info``. Thin: the plans live in ``flows.py``; these mixins drive them through
each face's ``_run``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..base.flows import BatchInfo
from ..base.models import EnqueueResult, JobSpec
from ..io.config import QueueConfig
from ..protocol.plan import Plan
from .flow_plans import FlowJob, batch_info_plan, batch_plan, chain_jobs, flow_plan


class FlowMethods:
    """``chain``, ``batch`` and ``batch_info``, blocking."""

    config: QueueConfig

    def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        raise NotImplementedError

    def _run_flow(self, jobs: Sequence[FlowJob]) -> list[EnqueueResult]:
        done: list[EnqueueResult] = self._run(flow_plan(self.config, jobs))
        return done

    def chain(self, specs: Iterable[JobSpec], *, on_parent_failure: str = "dead"
              ) -> list[EnqueueResult]:
        """Enqueue ``specs`` so that each runs after the one before has succeeded (the first
        at once); results in order. ``on_parent_failure`` as for ``enqueue(after=...)``."""
        return self._run_flow(chain_jobs(self.config, specs, on_parent_failure))

    def batch(self, specs: Iterable[JobSpec], *, id: str | None = None,
              on_success: JobSpec | None = None, on_complete: JobSpec | None = None,
              close: bool = True) -> BatchInfo:
        """Enqueue ``specs`` as the members of batch ``id`` (generated when None). Once the
        batch is closed and every member ended, ``on_success`` (when none died) and
        ``on_complete`` are enqueued, each exactly once, as ``<id>@1`` and ``<id>@2``.
        ``close=False`` keeps the batch open for more calls with the same ``id``
        (docs/workflows.md#batches)."""
        info: BatchInfo = self._run(batch_plan(self.config, specs, id, on_success, on_complete,
                                               close))
        return info

    def batch_info(self, id: str) -> BatchInfo | None:
        """A batch's progress; None when there is no such batch."""
        info: BatchInfo | None = self._run(batch_info_plan(self.config, id), False)
        return info


class AsyncFlowMethods:
    """``chain``, ``batch`` and ``batch_info``, awaitable; see ``FlowMethods``."""

    config: QueueConfig

    async def _run(self, plan: Plan[Any], create: bool = True) -> Any:
        raise NotImplementedError

    async def _run_flow(self, jobs: Sequence[FlowJob]) -> list[EnqueueResult]:
        done: list[EnqueueResult] = await self._run(flow_plan(self.config, jobs))
        return done

    async def chain(self, specs: Iterable[JobSpec], *, on_parent_failure: str = "dead"
                    ) -> list[EnqueueResult]:
        """See ``Queue.chain``."""
        return await self._run_flow(chain_jobs(self.config, specs, on_parent_failure))

    async def batch(self, specs: Iterable[JobSpec], *, id: str | None = None,
                    on_success: JobSpec | None = None, on_complete: JobSpec | None = None,
                    close: bool = True) -> BatchInfo:
        """See ``Queue.batch``."""
        info: BatchInfo = await self._run(batch_plan(self.config, specs, id, on_success,
                                                     on_complete, close))
        return info

    async def batch_info(self, id: str) -> BatchInfo | None:
        """See ``Queue.batch_info``."""
        info: BatchInfo | None = await self._run(batch_info_plan(self.config, id), False)
        return info
