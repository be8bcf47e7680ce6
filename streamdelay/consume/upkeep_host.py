"""The narrow interfaces the upkeep loops (``upkeep_loops.py``), the read loops (``reading.py``) and
the handler runner (``handler_slots.py``) see of a worker: no private attribute, no Worker class, so
they and ``worker.py`` do not import each other (docs/design.md). ``worker.Worker`` is all three.

Read-only: what a loop changes is a typed state it owns and writes through that state's own
methods (``TopicViews``, ``Slots``, ``AckLoop``, ``Counts``, ``OwnedTasks``), never an
attribute of the worker.
"""

from __future__ import annotations

from collections.abc import Collection, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..io.clients import AsyncClient
from ..io.config import QueueConfig
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Plan, Step
from ..telemetry.job_logs import JobObserver
from ..telemetry.observer import ConsumerObserver
from ..telemetry.worker_metrics import WorkerMetrics
from .acks import PendingAcks
from .core.consumer_core import ConsumerCore
from .core.leasing import LeaseBook
from .core.taking import Entry
from .counts import Counts
from .delivery import Delivery, Handler
from .liveness import Liveness
from .topic_views import TopicViews

T = TypeVar("T")


class UpkeepHost(Protocol):
    """What the upkeep loops need of a worker, and nothing more (``worker.Worker`` is one)."""

    @property
    def config(self) -> QueueConfig:
        """The queue's settings."""

    @property
    def metrics(self) -> WorkerMetrics | None:
        """This process's Prometheus metrics, when served (docs/operations.md#metrics)."""

    @property
    def leases(self) -> LeaseBook:
        """The deliveries holding a lease in partition 0's slot (consume/core/leasing.py)."""

    @property
    def group(self) -> str:
        """The consumer group."""

    @property
    def core(self) -> ConsumerCore:
        """The worker's consumer core: its routes (the views), their sort, the upkeep cadence
        (consume/core/consumer_core.py)."""

    @property
    def liveness(self) -> Liveness:
        """The upkeep loops' view of the contact with Redis (upkeep.py)."""

    @property
    def reports(self) -> ConsumerObserver:
        """The consumer observer the worker reports starts and settles to: the dashboard's
        lateness and throughput, the metrics (docs/design.md#observer)."""

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
    def inflight(self) -> Mapping[tuple[int, str, str], Delivery]:
        """The deliveries whose handlers run now, by (partition, topic, entry id)."""

    @property
    def client(self) -> AsyncClient:
        """The worker's command connection pool."""

    @property
    def acks_pending(self) -> bool:
        """True while finished jobs wait to be acknowledged."""

    @property
    def counts(self) -> Counts:
        """Counters the loops add to (``reclaimed``, ``released``, ...)."""

    @property
    def reclaim_interval(self) -> float:
        """Seconds between two reclaim passes."""

    @property
    def prune_idle(self) -> float:
        """Consumers silent this long and owning nothing are removed."""

    @property
    def prune_every(self) -> float:
        """Seconds between two prune passes."""

    @property
    def fleet_every(self) -> float:
        """Seconds between two renewals of the fleet entry (docs/operations.md#workers)."""

    def fleet_info(self) -> str:
        """What this worker is and runs now, as its fleet entry says it (JSON)."""

    async def call(self, step: Step, what: str) -> Any:
        """Run one step under the retry policy."""

    async def run_plan(self, plan: Plan[T], what: str) -> T:
        """Run a consumer plan under the retry policy."""

    async def register(self) -> None:
        """Bind the topics to the group again (after the group was deleted)."""

    def stop(self) -> None:
        """Ask the worker to stop gracefully."""


class ReadingHost(UpkeepHost, Protocol):
    """What the read loops need of a worker on top of ``UpkeepHost``."""

    @property
    def views(self) -> TopicViews:
        """The paused and limited topics (written by the pause and limit watches only)."""

    @property
    def block(self) -> float:
        """Seconds one blocking read waits."""

    @property
    def fleet_started_ms(self) -> int:
        """When this process started (epoch ms): ties a quiet or stop command to it."""

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""

    @property
    def acks(self) -> PendingAcks:
        """Acknowledgements not written yet."""

    def free_slots(self) -> int:
        """Handlers this worker can start now."""

    async def slot_freed(self) -> None:
        """Wait until a running delivery ends."""

    def start(self, delivery: Delivery, fields: dict[Any, Any] | None) -> bool:
        """Start a handler for one delivery, unless the worker already holds it."""

    def start_entries(self, entries: Iterable[Entry]) -> int:
        """Start a handler for each entry a read or a take gave; how many."""

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a background task the worker owns (awaited at shutdown)."""


class RunningHost(ReadingHost, Protocol):
    """What the handler runner needs of a worker on top of ``ReadingHost``."""

    @property
    def handlers(self) -> Mapping[str, Handler]:
        """The registered handlers, by topic."""

    @property
    def handler_timeout(self) -> float | None:
        """Seconds a handler may run (None: no limit)."""

    @property
    def observer(self) -> JobObserver:
        """Per-job logs and spans (telemetry/job_logs.py)."""
