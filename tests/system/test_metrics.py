"""Worker metrics and the exporter, read straight from their registries and ports: the outcomes
the Prometheus test does not reach (released, reclaimed), Redis going away under the exporter,
and the refusals (docs/operations.md#metrics)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

import streamdelay as sd
from streamdelay.metrics.queue_exporter import QueueCollector, exporter_queue
from tests.support.redis_server import RedisServer, free_port
from tests.system.test_metrics_prometheus import APP, running, streamdelay_process, wait_for

ROOT = Path(__file__).resolve().parents[2]


def sample(worker: sd.Worker, name: str, **labels: str) -> float | None:
    """One sample of the worker's registry."""
    assert worker.metrics is not None
    return worker.metrics.registry.get_sample_value(name, labels)  # type: ignore[no-any-return]


def test_jobs_handed_back_at_shutdown_count_as_released(queue: sd.Queue) -> None:
    worker = sd.Worker(queue, group="g", metrics_port=0, shutdown_grace=0.2)

    @worker.handler("slow")
    async def slow(job: sd.Job) -> None:
        await asyncio.sleep(30)

    for _ in range(3):
        queue.enqueue("slow", None)

    async def scenario() -> bytes:
        serving = asyncio.create_task(worker.serve())
        while len(worker.inflight) < 3:
            await asyncio.sleep(0.02)
        assert worker.metrics is not None and worker.metrics.server is not None
        url = f"http://127.0.0.1:{worker.metrics.server.port}/metrics"  # port 0: any free one
        text: bytes = await asyncio.to_thread(lambda: urllib.request.urlopen(url).read())
        worker.stop()
        await serving
        return text

    text = asyncio.run(scenario())
    assert f'streamdelay_lateness_seconds_count{{queue="{queue.name}",topic="slow"}} 3.0' \
        in text.decode()
    labels = {"queue": queue.name, "topic": "slow", "group": "g"}
    assert sample(worker, "streamdelay_jobs_total", outcome="released", **labels) == 3
    assert sample(worker, "streamdelay_jobs_total", outcome="handled", **labels) is None
    assert queue.stats().topics["slow"].ready == 3


def test_jobs_of_a_killed_worker_count_as_reclaimed_by_the_one_that_takes_them(
        redis_url: str, queue_name: str) -> None:
    dying = streamdelay_process("worker", APP, "--url", redis_url, queue=queue_name)
    with running(dying), sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("m.ok", {"ms": 60_000}, ttr=1)
        wait_for("the job to be reserved", lambda: q.stats().topics["m.ok"].reserved == 1)
        dying.send_signal(signal.SIGKILL)
        dying.wait(10)
        taker = sd.Worker(q, group="metrics-app", metrics_port=0, reclaim_interval=0.2,
                          dispatch=True)

        @taker.handler("m.ok")
        def ok(job: sd.Job) -> None:
            pass

        asyncio.run(asyncio.wait_for(taker.serve(until_idle=True), 30))
        labels = {"queue": queue_name, "topic": "m.ok", "group": "metrics-app"}
        assert sample(taker, "streamdelay_jobs_total", outcome="reclaimed", **labels) == 1
        assert sample(taker, "streamdelay_jobs_total", outcome="handled", **labels) == 1


def test_the_exporter_says_so_while_redis_is_away(durable_redis: RedisServer,
                                                  queue_name: str) -> None:
    queue = exporter_queue(queue_name, durable_redis.url, None)
    queue.enqueue("t", None, delay=3600)
    registry = CollectorRegistry()
    registry.register(QueueCollector(queue))
    up = f'streamdelay_exporter_up{{queue="{queue_name}"}}'
    delayed = f'streamdelay_queue_jobs{{queue="{queue_name}",state="delayed",topic="t"}} 1.0'
    try:
        text = generate_latest(registry).decode()
        assert f"{up} 1.0" in text and delayed in text
        durable_redis.kill()
        text = generate_latest(registry).decode()  # answers (retry_for 3 s), without gauges
        assert f"{up} 0.0" in text and "streamdelay_queue_jobs{" not in text
        durable_redis.start()
        text = generate_latest(registry).decode()
        assert f"{up} 1.0" in text and delayed in text
    finally:
        queue.close()


def test_a_taken_or_invalid_metrics_port_is_refused(queue: sd.Queue) -> None:
    for bad in (-1, 65536, "9100", True):
        with pytest.raises(sd.ConfigError, match="metrics_port"):
            sd.Worker(queue, metrics_port=bad)  # type: ignore[arg-type]
    port = free_port()
    worker = sd.Worker(queue, metrics_port=port)
    worker.handler("t")(lambda job: None)
    with __import__("socket").socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        with pytest.raises(sd.ConfigError, match=f"metrics_port: cannot listen on .*:{port}"):
            asyncio.run(worker.serve())


def test_without_a_metrics_port_prometheus_client_is_never_imported() -> None:
    code = ("import sys, streamdelay as sd\n"
            "w = sd.Worker(sd.Queue('q'))\n"
            "print(w.metrics, 'prometheus_client' in sys.modules)\n"
            "sys.modules['prometheus_client'] = None  # as when the extra is not installed\n"
            "try:\n"
            "    sd.Worker(sd.Queue('q'), metrics_port=9100)\n"
            "except sd.ConfigError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    lines = out.stdout.splitlines()
    assert lines[0] == "None False"
    assert "metrics_port" in lines[1] and "pip install 'streamdelay[metrics]'" in lines[1]


def test_the_exporter_command_refuses_a_bad_port_in_one_line() -> None:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "streamdelay", "exporter", "q", "--port",
                          "70000"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert "--port" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 30


def test_the_docs_and_the_dashboard_name_exactly_the_metrics_served(queue: sd.Queue) -> None:
    from streamdelay.telemetry.worker_metrics import WorkerMetrics

    metrics = WorkerMetrics(queue.name, "g", 0)
    job = sd.Job(id="j", topic="t", body=None, due=0, created=0, attempt=1, max_attempts=1,
                 ttr=1.0, headers={}, entry_id="0-1", partition=0)
    metrics.count("t", "handled")
    metrics.handler_time.labels(queue.name, "t", "handled").observe(0.1)
    metrics.lateness.labels(queue.name, job.topic).observe(0.001)
    metrics.priority_lateness.labels(queue.name, job.topic, "5").observe(0.001)  # staged
    queue.enqueue("t", None, delay=60)
    queue.limit("t", rate="1/s", concurrency=2)  # the limit gauges show only limited topics
    registry = CollectorRegistry()
    registry.register(QueueCollector(queue))
    served = {line.split("{")[0].split(" ")[0] for text in
              (generate_latest(metrics.registry), generate_latest(registry))
              for line in text.decode().splitlines() if line.startswith("streamdelay_")}
    served = {name for name in served if not name.endswith("_created")}
    families = {re.sub(r"_(bucket|count|sum)$", "", name) for name in served}
    families.add("streamdelay_promoted_total")  # only with an embedded dispatcher running
    table = (ROOT / "docs" / "operations.md").read_text()
    documented = set(re.findall(r"^\| `(streamdelay_[a-z_]+)` \|", table, re.MULTILINE))
    assert documented == families
    for outcome in ("handled", "retried", "dead", "dropped", "reclaimed", "released"):
        assert f"| `{outcome}` |" in table
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"streamdelay_[a-z_]+", expr)}
    assert used and used <= served | {"streamdelay_promoted_total"}


def test_lateness_by_priority_is_counted_for_staged_topics_only(queue: sd.Queue) -> None:
    """docs/priorities.md: ``streamdelay_priority_lateness_seconds`` has a ``priority`` label
    and only the jobs of staged topics; the lateness of every topic stays as it was."""
    worker = sd.Worker(queue, group="g", metrics_port=0)
    ran: list[str] = []

    @worker.handler("urgent")
    async def urgent(job: sd.Job) -> None:
        ran.append(job.id)

    @worker.handler("plain")
    async def plain(job: sd.Job) -> None:
        ran.append(job.id)

    queue.enqueue("urgent", None, priority=9)
    queue.enqueue("urgent", None, priority=2)
    queue.enqueue("urgent", None, priority=2, key="acme")
    queue.enqueue("plain", None)
    worker.run(until_idle=True)
    assert len(ran) == 4
    name = "streamdelay_priority_lateness_seconds_count"
    assert sample(worker, name, queue=queue.name, topic="urgent", priority="9") == 1
    assert sample(worker, name, queue=queue.name, topic="urgent", priority="2") == 2
    assert sample(worker, name, queue=queue.name, topic="plain", priority="5") is None
    assert sample(worker, "streamdelay_lateness_seconds_count", queue=queue.name,
                  topic="plain") == 1
