"""The fleet's live workers as ``Queue.workers`` reads them, with real worker processes: two
workers, what each runs, one killed with SIGKILL leaving the list once its entry's lease ends
(docs/operations.md#workers)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import streamdelay as sd
from tests.system.test_metrics_prometheus import running, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.apps.fleet_worker_app:worker"
EVERY_S = 0.5  # the workers' renewal: their entries live 1.5 s without one


def fleet_worker(url: str, queue: str, *extra: str) -> subprocess.Popen[bytes]:
    """``streamdelay worker`` of the fleet app as a child process."""
    env = dict(os.environ, FLEET_APP_QUEUE=queue, FLEET_APP_EVERY=str(EVERY_S),
               PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "streamdelay", "worker", APP, "--url", url,
                             "--concurrency", "2", *extra], cwd=ROOT, env=env)


def listed(q: sd.Queue) -> list[sd.WorkerInfo]:
    """``q.workers()``, empty while no worker has created the queue yet."""
    try:
        return q.workers()
    except sd.NoSuchQueue:
        return []


def test_two_workers_listed_and_a_killed_one_leaves_after_its_lease(
        redis_url: str, queue_name: str) -> None:
    first, second = fleet_worker(redis_url, queue_name), fleet_worker(redis_url, queue_name)
    with running(first, second), sd.Queue(queue_name, url=redis_url) as q:
        pids = {first.pid, second.pid}
        wait_for("both workers listed", lambda: {w.pid for w in listed(q)} == pids)
        ids = [q.enqueue("f.slow", {"ms": 60_000}).id for _ in range(3)]

        def running_ids() -> set[str]:
            return {i for w in q.workers() for i in w.running}

        wait_for("the three jobs shown running", lambda: running_ids() == set(ids))
        for info in q.workers():
            assert info.kind == "worker" and info.state == "running"
            assert info.group == "fleet-app" and info.topics == ("f.slow",)
            assert info.concurrency == 2 and info.version == sd.__version__
            assert info.host and info.name.startswith(info.host)
            assert info.started <= info.last_seen <= time.time() + 5
            assert len(info.running) == len(info.running_since) == info.running_count <= 2
            assert all(info.started - 5 <= s <= info.last_seen + 5 for s in info.running_since)
        name = next(w.name for w in q.workers() if w.pid == first.pid)
        found = q.worker(name)
        assert found is not None and found.pid == first.pid
        assert q.worker("no-such-worker") is None
        q.reserve("p.topic", group="pullers", consumer="puller-1", wait=0)
        pulled = q.worker("puller-1")
        assert pulled is not None and pulled.kind == "pull" and pulled.pid == 0
        assert pulled.group == "pullers" and pulled.topics == ("p.topic",)
        assert abs(pulled.started - pulled.last_seen) < 0.001  # no start time of its own

        first.send_signal(signal.SIGKILL)
        first.wait(10)
        wait_for("the killed worker gone from the list",
                 lambda: {w.pid for w in q.workers() if w.kind == "worker"} == {second.pid})
        assert q.worker(name) is None
        time.sleep(3 * EVERY_S * 2)  # the live one stays: it renews
        assert [w.pid for w in q.workers() if w.kind == "worker"] == [second.pid]


def test_a_stopping_worker_says_so_then_its_entry_expires(redis_url: str,
                                                          queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: [w.pid for w in listed(q)] == [worker.pid])
        q.enqueue("f.slow", {"ms": 3_000})
        wait_for("its job running", lambda: q.workers()[0].running_count == 1)
        worker.send_signal(signal.SIGTERM)  # graceful: finishes the job first (grace 5 s)
        wait_for("state stopping", lambda: [w.state for w in q.workers()] == ["stopping"])
        worker.wait(15)
        wait_for("the entry expired", lambda: q.workers() == [], timeout=10)
