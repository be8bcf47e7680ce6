"""The queue-level exporter: ``streamdelay exporter QUEUE --port PORT``.

At each scrape it reads the queue's stats (``Queue.stats``: one bounded ``readStats`` call per
partition, whatever the backlog) and serves them as gauges; it is not a worker and writes
nothing. One exporter per queue is enough however many workers run (docs/operations.md).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterable
from types import FrameType
from typing import Any

from redis.exceptions import RedisError

from ..base.errors import StreamdelayError
from ..client.queue import Queue
from ..limits.rates import parse_rate
from ..telemetry.metrics_server import MetricsServer
from ..telemetry.prometheus import prometheus

log = logging.getLogger("streamdelay.metrics")
FIELD = "port"
# A scrape must answer within Prometheus' scrape timeout (10 s by default), Redis away or not.
STATS_SOCKET_TIMEOUT = 2.0
STATS_GIVE_UP = 3.0


class QueueCollector:
    """``streamdelay_queue_jobs``, ``streamdelay_queue_lag_seconds`` and
    ``streamdelay_exporter_up`` of one or more queues (``streamdelay serve`` passes every queue
    it serves), read at scrape time."""

    def __init__(self, *queues: Queue) -> None:
        self.queues = queues
        self.client = prometheus(FIELD)

    def collect(self) -> Iterable[Any]:
        """The gauges of every topic (a queue whose stats failed: only its ``up`` at 0)."""
        core = self.client.metrics_core
        up = core.GaugeMetricFamily("streamdelay_exporter_up", "1 when the last read of the "
                                    "queue's stats succeeded, else 0.", labels=["queue"])
        jobs = core.GaugeMetricFamily("streamdelay_queue_jobs", "Jobs of the queue by topic and "
                                      "state (waiting: for their parents, only when some "
                                      "are), summed over its partitions.",
                                      labels=["queue", "topic", "state"])
        lag = core.GaugeMetricFamily("streamdelay_queue_lag_seconds", "How long the oldest due, "
                                     "not yet delivered job of the topic has waited.",
                                     labels=["queue", "topic"])
        limit = core.GaugeMetricFamily("streamdelay_queue_limit", "The topic's limit across all "
                                       "workers (docs/limits.md): kind rate_per_second or "
                                       "concurrency.", labels=["queue", "topic", "kind"])
        leases = core.GaugeMetricFamily("streamdelay_queue_leases", "Jobs of the topic running "
                                        "under its concurrency limit (leases held).",
                                        labels=["queue", "topic"])
        read = False
        for queue in self.queues:
            name = queue.name
            try:
                stats = queue.stats()
            except (StreamdelayError, RedisError, OSError) as exc:
                log.warning("could not read the stats of queue %s (%s)", name, exc)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            read = True
            for topic, row in sorted(stats.topics.items()):
                for state in ("delayed", "ready", "reserved", "dead"):
                    jobs.add_metric([name, topic, state], getattr(row, state))
                if row.waiting:  # waiting for their parents (docs/workflows.md)
                    jobs.add_metric([name, topic, "waiting"], row.waiting)
                lag.add_metric([name, topic], row.lag_ms / 1000.0)
                if row.rate:
                    limit.add_metric([name, topic, "rate_per_second"],
                                     parse_rate(row.rate).per_second)
                if row.concurrency:
                    limit.add_metric([name, topic, "concurrency"], row.concurrency)
                    leases.add_metric([name, topic], row.leases)
        if read:
            yield from (jobs, lag, limit, leases)
        yield up


def exporter_queue(name: str, url: str | None, partitions: int | None) -> Queue:
    """The exporter's queue: short socket timeout and retries, so a scrape answers in time."""
    return Queue(name, url=url, partitions=partitions, socket_timeout=STATS_SOCKET_TIMEOUT,
                 retry_for=STATS_GIVE_UP)


def serve_exporter(queue: Queue, port: int, addr: str = "0.0.0.0") -> None:
    """Serve the queue's gauges on ``addr:port`` until SIGINT/SIGTERM (blocks)."""
    client = prometheus(FIELD)
    registry = client.CollectorRegistry()
    registry.register(QueueCollector(queue))
    server = MetricsServer(registry, port, addr, FIELD)
    log.info("exporter of queue %s (%d partition(s)) serving http://%s:%d/metrics", queue.name,
             queue.config.partitions, addr, server.port)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stopping.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
        log.info("exporter of queue %s stopped", queue.name)
