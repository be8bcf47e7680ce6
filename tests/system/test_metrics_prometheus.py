"""A real Prometheus server scrapes a live worker process (``--metrics-port``) and an exporter
(``streamdelay exporter``); the assertions are PromQL over its HTTP API (docs/operations.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import streamdelay as sd
from tests.support.prometheus_server import PrometheusServer
from tests.support.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.apps.metrics_app:worker"


def streamdelay_process(*args: str, queue: str) -> subprocess.Popen[bytes]:
    """``streamdelay ARGS`` as a child process, run from the repository root."""
    env = dict(os.environ, METRICS_APP_QUEUE=queue, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "streamdelay", *args], cwd=ROOT, env=env)


@contextmanager
def running(*processes: subprocess.Popen[bytes]) -> Iterator[None]:
    """Stop the processes (SIGTERM, then SIGKILL) when the block ends."""
    try:
        yield
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` at ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as exc:  # not listening yet
            last = exc
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def serves_metrics(port: int) -> bool:
    """True once ``/metrics`` answers on ``port``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
        return bool(reply.status == 200)


def test_prometheus_scrapes_a_live_worker_and_the_exporter(redis_url: str,
                                                          queue_name: str) -> None:
    worker_port, exporter_port = free_port(), free_port()
    worker = streamdelay_process("worker", APP, "--url", redis_url, "--metrics-port",
                                 str(worker_port), queue=queue_name)
    exporter = streamdelay_process("exporter", queue_name, "--url", redis_url, "--port",
                                   str(exporter_port), queue=queue_name)
    targets: dict[str, str | list[str]] = {"worker": f"127.0.0.1:{worker_port}",
                                           "exporter": f"127.0.0.1:{exporter_port}"}
    with running(worker, exporter), PrometheusServer(targets) as prom, \
            sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker's /metrics", lambda: serves_metrics(worker_port))
        wait_for("both targets up", lambda: set(prom.targets_up().values()) == {"up"})
        handled = 150
        for i in range(handled):  # due over ~2 s
            q.enqueue("m.ok", {"ms": 2}, delay=0.2 + i * 0.013)
        for _ in range(3):
            q.enqueue("m.drop", None)
        for _ in range(2):
            q.enqueue("m.fail", None, max_attempts=2)  # retried once, then dead
        for _ in range(5):
            q.enqueue("m.ok", None, delay=3600)  # stays delayed
        for _ in range(2):
            q.enqueue("m.nobody", None)  # no worker serves it: ready, with a growing lag

        def settled() -> bool:
            topics = q.stats().topics
            return (topics["m.ok"].delayed == 5 and topics["m.ok"].ready == 0
                    and topics["m.ok"].reserved == 0 and topics["m.fail"].dead == 2
                    and topics["m.nobody"].ready == 2)

        wait_for("every due job settled", settled)
        selector = f'queue="{queue_name}"'

        def jobs(outcome: str) -> float | None:
            return prom.value(f'sum(streamdelay_jobs_total{{{selector},outcome="{outcome}"}})')

        wait_for("Prometheus to scrape the last settlement",
                 lambda: jobs("handled") == handled and jobs("dead") == 2)
        assert jobs("dropped") == 3
        assert jobs("retried") == 2
        starts = handled + 3 + 4  # every handler start has a lateness
        assert prom.value(f"sum(streamdelay_lateness_seconds_count{{{selector}}})") == starts
        assert prom.value(f"sum(streamdelay_handler_seconds_count{{{selector}}})") == starts
        p99 = prom.value("histogram_quantile(0.99, sum by (le) "
                         f"(streamdelay_lateness_seconds_bucket{{{selector},topic=\"m.ok\"}}))")
        assert p99 is not None and 0 <= p99 < 1.0  # due jobs start on time, not seconds late
        # every promotion of the embedded dispatcher: all jobs due by now, retries included
        assert prom.value(f"streamdelay_promoted_total{{{selector}}}") == handled + 3 + 4 + 2

        stats = q.stats().topics

        def gauges_match_stats() -> bool:
            rows = prom.query(f"streamdelay_queue_jobs{{{selector}}}")
            seen = {(r["metric"]["topic"], r["metric"]["state"]): float(r["value"][1])
                    for r in rows}
            wanted = {(topic, state): float(getattr(row, state)) for topic, row in stats.items()
                      for state in ("delayed", "ready", "reserved", "dead")}
            return seen == wanted

        wait_for("the exporter's gauges to equal stats()", gauges_match_stats)
        assert stats["m.nobody"].ready == 2 and stats["m.ok"].delayed == 5
        lag = prom.value(f'streamdelay_queue_lag_seconds{{{selector},topic="m.nobody"}}')
        assert lag is not None and lag > 0
        assert prom.value(f'streamdelay_queue_lag_seconds{{{selector},topic="m.ok"}}') == 0
        assert prom.value(f"streamdelay_exporter_up{{{selector}}}") == 1
