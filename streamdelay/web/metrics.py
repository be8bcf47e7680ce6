"""``/metrics`` of ``streamdelay serve``: the queue gauges of every served queue (the same
collector as ``streamdelay exporter``), the embedded dispatchers' promotions, the jobs its HTTP
consumers settled (``streamdelay_jobs_total``, ``streamdelay_lateness_seconds``: the names a
worker serves, docs/operations.md#metrics), and the HTTP request metrics (docs/http.md#metrics):

- ``streamdelay_http_requests_total{method,route,status}``: requests answered, by route
  template (``/v1/queues/{queue}/jobs``, never the concrete path: bounded label values);
- ``streamdelay_http_request_seconds{method,route}``: time to the response's start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..client.queue import Queue
from ..io.config import QueueConfig
from ..metrics.queue_exporter import QueueCollector, exporter_queue
from ..telemetry.prometheus import LATENESS_BUCKETS, prometheus
from .api.paths import public_path

log = logging.getLogger("streamdelay.web")
HTTP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                5.0, 10.0, 30.0)
FIELD = "metrics"
UNMATCHED = "(unmatched)"


class _Promoted:
    """``streamdelay_promoted_total{queue}`` of the embedded dispatchers, read at scrape."""

    def __init__(self, client: Any, counts: Callable[[], dict[str, int]]) -> None:
        self.client, self.counts = client, counts

    def collect(self) -> Iterable[Any]:
        """One sample per served queue with a dispatcher."""
        counts = self.counts()
        if not counts:
            return
        family = self.client.metrics_core.CounterMetricFamily(
            "streamdelay_promoted", "Jobs moved from the delayed set into their topic stream "
            "by this process's embedded dispatcher.", labels=["queue"])
        for queue, promoted in sorted(counts.items()):
            family.add_metric([queue], promoted)
        yield family


class QueueReporter:
    """A ``telemetry.observer.Reporter``: one served queue's reports, into ``HttpMetrics``."""

    def __init__(self, metrics: HttpMetrics, queue: str) -> None:
        self.metrics, self.queue = metrics, queue

    def started(self, topic: str, group: str, late_ms: float, priority: str | None) -> None:
        """A job was handed out ``late_ms`` after its due time (server clock)."""
        del group  # the lateness histograms are per queue and topic, as a worker's
        self.metrics.lateness.labels(self.queue, topic).observe(late_ms / 1000.0)
        if priority is not None:
            self.metrics.priority_lateness.labels(self.queue, topic, priority).observe(
                late_ms / 1000.0)

    def settled(self, topic: str, group: str, outcome: str, count: int) -> None:
        """``count`` deliveries were settled as ``outcome``."""
        self.metrics.settled(self.queue, topic, group, outcome, count)


class HttpMetrics:
    """The registry of one service process."""

    def __init__(self, configs: Iterable[QueueConfig],
                 promoted: Callable[[], dict[str, int]]) -> None:
        client = self.client = prometheus(FIELD)
        self.registry = registry = client.CollectorRegistry()
        for collector in (client.ProcessCollector, client.PlatformCollector,
                          client.GCCollector):
            collector(registry=registry)
        self.requests = client.Counter(
            "streamdelay_http_requests", "HTTP requests answered, by route template and status.",
            ["method", "route", "status"], registry=registry)
        self.seconds = client.Histogram(
            "streamdelay_http_request_seconds", "Time from a request's arrival to its "
            "response's start, by route template.", ["method", "route"], buckets=HTTP_BUCKETS,
            registry=registry)
        # a blocking twin of each served queue: the collector reads stats at scrape time, in a
        # thread (``render``), with the exporter's short timeouts
        self.stat_queues: list[Queue] = [
            exporter_queue(cfg.name, cfg.url, cfg.partitions) for cfg in configs]
        registry.register(QueueCollector(*self.stat_queues))
        registry.register(_Promoted(client, promoted))
        self.jobs = client.Counter(
            "streamdelay_jobs", "Deliveries settled through this service's consumer routes "
            "(and re-queued by its reclaim), by outcome.",
            ["queue", "topic", "group", "outcome"], registry=registry)
        self.lateness = client.Histogram(
            "streamdelay_lateness_seconds", "Reserve time minus due time of the jobs HTTP "
            "consumers took (Redis server clock).", ["queue", "topic"],
            buckets=LATENESS_BUCKETS, registry=registry)
        self.priority_lateness = client.Histogram(  # the name and labels a worker's has
            "streamdelay_priority_lateness_seconds", "Reserve time minus due time of the jobs "
            "of staged topics (priorities, fairness keys) HTTP consumers took, by priority.",
            ["queue", "topic", "priority"], buckets=LATENESS_BUCKETS, registry=registry)
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def settled(self, queue: str, topic: str, group: str, outcome: str, count: int = 1
                ) -> None:
        """Count ``count`` deliveries settled (handled, retried, dead) or reclaimed."""
        self.jobs.labels(queue, topic, group, outcome).inc(count)

    def reporter(self, queue: str) -> QueueReporter:
        """What the served queue's consumer observer tells these metrics
        (``telemetry/observer.py``): the lateness of each job handed out on ``:reserve`` (by
        priority for a staged topic's job, as a worker's), each delivery settled."""
        return QueueReporter(self, queue)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.requests.labels(method, route, str(status)),
                                              self.seconds.labels(method, route))
        children[0].inc()
        children[1].observe(seconds)

    async def render(self) -> bytes:
        """The Prometheus text of the registry (stats are read in a thread)."""
        data: bytes = await asyncio.to_thread(self.client.generate_latest, self.registry)
        return data

    @property
    def content_type(self) -> str:
        """The exposition format's content type."""
        value: str = self.client.CONTENT_TYPE_LATEST
        return value

    def close(self) -> None:
        """Close the stats queues' connections."""
        for queue in self.stat_queues:
            queue.close()


class MetricsMiddleware:
    """Times every HTTP request and counts it by route template and status; at
    ``--log-level debug`` logs one line per request (never a header or a body)."""

    def __init__(self, app: Any, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on; observe it when its response starts."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def sending(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            template = scope.get("path_template")
            route = public_path(template) if template else UNMATCHED
            seconds = time.perf_counter() - started
            method = scope.get("method", "GET")
            self.metrics.observe(method, route, status, seconds)
            if log.isEnabledFor(logging.DEBUG):
                user = scope.get("user")
                log.debug("%s %s %d", method, route, status, extra={
                    "status": status, "duration_ms": round(seconds * 1000, 3),
                    "principal": getattr(user, "name", None)})
