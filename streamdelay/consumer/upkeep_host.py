"""The narrow interface the upkeep loops (``upkeep.py``) see of a worker: no private attribute,
no Worker class, so upkeep and worker do not import each other (docs/design.md).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..protocol.keys import PartitionKeys
from ..protocol.plan import Plan
from ..protocol.scripts import ScriptCall
from .delivery import Delivery

T = TypeVar("T")


class UpkeepHost(Protocol):
    """What the upkeep loops need of a worker, and nothing more (``worker.Worker`` is one)."""

    @property
    def group(self) -> str:
        """The consumer group."""

    @property
    def consumer(self) -> str:
        """This worker's consumer name."""

    @property
    def partitions(self) -> Sequence[PartitionKeys]:
        """The keys of every partition of the queue."""

    @property
    def topics(self) -> Collection[str]:
        """The topics this worker has handlers for."""

    @property
    def inflight(self) -> Mapping[Any, Delivery]:
        """The deliveries whose handlers run now."""

    @property
    def acks_pending(self) -> bool:
        """True while finished jobs wait to be acknowledged."""

    @property
    def counts(self) -> dict[str, int]:
        """Counters the loops add to (``reclaimed``, ``released``)."""

    @property
    def reclaim_interval(self) -> float:
        """Seconds between two reclaim passes."""

    @property
    def prune_idle(self) -> float:
        """Consumers silent this long and owning nothing are removed."""

    @property
    def prune_every(self) -> float:
        """Seconds between two prune passes."""

    async def call(self, step: ScriptCall, what: str) -> Any:
        """Run one script call under the retry policy."""

    async def run_plan(self, plan: Plan[T], what: str) -> T:
        """Drive a plan to its end under the retry policy."""

    async def register(self) -> None:
        """Bind the topics to the group again (after the group was deleted)."""

    def stop(self) -> None:
        """Ask the worker to stop gracefully."""
