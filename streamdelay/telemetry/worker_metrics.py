"""The worker's own metrics: settled jobs by outcome, lateness and handler time, promotions.

A ``Worker(..., metrics_port=PORT)`` creates one ``WorkerMetrics``; the worker calls its hooks
where it starts a handler and where it settles a delivery (nothing is called without
``metrics_port``). Each worker process serves its own registry on its own port
(docs/operations.md#metrics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .metrics_server import MetricsServer
from .prometheus import HANDLER_BUCKETS, LATENESS_BUCKETS, port, prometheus

if TYPE_CHECKING:
    from ..io.config import QueueConfig


class Dispatcher(Protocol):
    """What the promoted counter reads of a dispatcher (``dispatch.dispatcher.Dispatcher``)."""

    promoted: int
    on_expired: Callable[[str, int], None] | None
    on_purged: Callable[[str, int], None] | None


class Delivery(Protocol):
    """What the settle hooks read of a delivery (``consume.delivery.Delivery``)."""

    topic: str
    handler_s: float | None

FIELD = "metrics_port"


class _Promoted:
    """``streamdelay_promoted_total``: read from the embedded dispatchers at scrape time."""

    def __init__(self, client: Any, queue: str) -> None:
        self.client, self.queue = client, queue
        self.earlier = 0  # promoted by the dispatchers of earlier ``serve()`` runs
        self.current: Dispatcher | None = None

    def watch(self, dispatcher: Dispatcher) -> None:
        """Count this dispatcher's promotions from now on (after the earlier ones)."""
        if self.current is not None and self.current is not dispatcher:
            self.earlier += self.current.promoted
        self.current = dispatcher

    def collect(self) -> Iterable[Any]:
        """The counter, when there is an embedded dispatcher."""
        if self.current is None:  # no embedded dispatcher (dispatch=False): no series
            return
        family = self.client.metrics_core.CounterMetricFamily(
            "streamdelay_promoted", "Jobs moved from the delayed set into their topic stream "
            "by this process's embedded dispatcher.", labels=["queue"])
        family.add_metric([self.queue], self.earlier + self.current.promoted)
        yield family


class WorkerReporter:
    """A ``telemetry.observer.Reporter``: a worker's reports, into its ``WorkerMetrics``."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics

    def started(self, topic: str, group: str, late_ms: float, priority: str | None) -> None:
        """A handler started ``late_ms`` after its job's due time."""
        del group  # the worker's metrics carry its one group
        self.metrics.late(topic, late_ms, priority)

    def settled(self, topic: str, group: str, outcome: str, count: int) -> None:
        """``count`` deliveries were settled as ``outcome``."""
        del group
        self.metrics.count(topic, outcome, count)


class WorkerMetrics:
    """The metrics of one worker process and the server that serves them."""

    def __init__(self, queue: str, group: str, port: int, addr: str = "0.0.0.0") -> None:
        client = prometheus(FIELD)
        self.queue, self.group, self.port, self.addr = queue, group, port, addr
        self.registry = registry = client.CollectorRegistry()
        for collector in (client.ProcessCollector, client.PlatformCollector,
                          client.GCCollector):
            collector(registry=registry)
        self.jobs = client.Counter(
            "streamdelay_jobs", "Deliveries settled by this worker, by outcome.",
            ["queue", "topic", "group", "outcome"], registry=registry)
        self.lateness = client.Histogram(
            "streamdelay_lateness_seconds", "Handler start minus due time (Redis server clock).",
            ["queue", "topic"], buckets=LATENESS_BUCKETS, registry=registry)
        self.priority_lateness = client.Histogram(
            "streamdelay_priority_lateness_seconds", "Handler start minus due time of the jobs "
            "of staged topics (priorities, fairness keys), by priority.",
            ["queue", "topic", "priority"], buckets=LATENESS_BUCKETS, registry=registry)
        self.handler_time = client.Histogram(
            "streamdelay_handler_seconds", "How long handlers ran, by the delivery's outcome.",
            ["queue", "topic", "outcome"], buckets=HANDLER_BUCKETS, registry=registry)
        self.promoted = _Promoted(client, queue)
        registry.register(self.promoted)
        self.server: MetricsServer | None = None
        self._jobs: dict[tuple[str, str], Any] = {}
        self._lateness: dict[str, Any] = {}
        self._priority: dict[tuple[str, str], Any] = {}
        self._handler: dict[tuple[str, str], Any] = {}

    # --- life cycle ------------------------------------------------------------------------

    def start(self, config: QueueConfig, dispatcher: Dispatcher | None = None) -> None:
        """Serve ``/metrics``; count ``dispatcher``'s promotions
        (the embedded one, if any) and the jobs it expired (outcome ``expired``)."""
        if dispatcher is not None:
            self.promoted.watch(dispatcher)
            # jobs it dead-lettered past their deadline count as outcome "expired" (no delivery)
            dispatcher.on_expired = lambda topic, n: self.count(topic, "expired", n)
            dispatcher.on_purged = lambda topic, n: self.count(topic, "purged", n)
        if self.server is None:
            self.server = MetricsServer(self.registry, self.port, self.addr, FIELD)

    def stop(self) -> None:
        """Stop serving."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    # --- hooks (called by the worker) -------------------------------------------------------

    def reporter(self) -> WorkerReporter:
        """What the worker's consumer observer tells these metrics (``telemetry/observer.py``):
        each handler start's lateness, each delivery settled."""
        return WorkerReporter(self)

    def late(self, topic: str, late_ms: float, priority: str | None = None) -> None:
        """A handler started ``late_ms`` after its job's due time (server clock); for a job of
        a staged topic by its ``priority`` too (docs/priorities.md)."""
        child = self._lateness.get(topic)
        if child is None:
            child = self._lateness[topic] = self.lateness.labels(self.queue, topic)
        child.observe(late_ms / 1000.0)
        if priority is not None:
            key = (topic, priority)
            by = self._priority.get(key)
            if by is None:
                by = self._priority[key] = self.priority_lateness.labels(self.queue, *key)
            by.observe(late_ms / 1000.0)

    def timed(self, delivery: Delivery, outcome: str) -> None:
        """A delivery is settled: time its handler when one ran (the count comes through the
        observer: ``reporter``)."""
        if delivery.handler_s is not None:
            key = (delivery.topic, outcome)
            child = self._handler.get(key)
            if child is None:
                child = self._handler[key] = self.handler_time.labels(self.queue, *key)
            child.observe(delivery.handler_s)

    def count(self, topic: str, outcome: str, amount: int = 1) -> None:
        """Add ``amount`` to ``streamdelay_jobs_total`` of ``topic`` and ``outcome``."""
        key = (topic, outcome)
        child = self._jobs.get(key)
        if child is None:
            child = self._jobs[key] = self.jobs.labels(self.queue, topic, self.group, outcome)
        child.inc(amount)

    def released(self, deliveries: Sequence[Delivery], handed_back: int) -> None:
        """Jobs handed back at shutdown; the reply only counts them, so when some were stale
        the count goes to the first topics of the batch."""
        for delivery in deliveries[:handed_back]:
            self.count(delivery.topic, "released")


def metrics_for_worker(queue: str, group: str, metrics_port: int | None) -> WorkerMetrics | None:
    """The metrics of a worker serving on ``metrics_port``; None (no cost) without a port."""
    if metrics_port is None:
        return None
    return WorkerMetrics(queue, group, port(metrics_port, "metrics_port"))
