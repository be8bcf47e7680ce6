"""Quiet and stop a worker process from outside (``Queue.quiet_worker``, ``stop_worker``, CLI
``streamdelay workers QUEUE --quiet NAME | --stop NAME``) with real worker processes: a quieted
one takes no new job and finishes its running one (state ``quiet``, ``/readyz`` 503), a stopped
one exits 0, one killed with SIGKILL leaves the list after its lease
(docs/operations.md#quiet-and-stop)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.redis_server import free_port
from tests.system.test_fleet_workers import fleet_worker, listed
from tests.system.test_metrics_prometheus import running, wait_for
from tests.system.test_worker_probes import probe, wait_status

ROOT = Path(__file__).resolve().parents[2]
LEARNS_S = 2.0  # the promise: a worker learns of a command within 2 s (pause watch: 0.5 s)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``streamdelay ...`` as a child process, its output captured."""
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def state_of(q: sd.Queue, name: str) -> str | None:
    """The listed state of worker ``name`` (None: not listed)."""
    found = q.worker(name)
    return None if found is None else found.state


def test_quiet_stop_and_kill_three_worker_processes(redis_url: str, queue_name: str) -> None:
    ports = [free_port() for _ in range(3)]
    procs = [fleet_worker(redis_url, queue_name, "--health-port", str(p)) for p in ports]
    with running(*procs), sd.Queue(queue_name, url=redis_url) as q:
        wait_for("three workers listed",
                 lambda: {w.pid for w in listed(q)} == {p.pid for p in procs})
        names = {w.pid: w.name for w in q.workers()}
        first = q.enqueue("f.slow", {"ms": 6_000}).id
        holder = wait_for("the long job running",
                          lambda: next((w for w in q.workers() if first in w.running), None))
        quiet_i = next(i for i, p in enumerate(procs) if p.pid == holder.pid)
        quieted, port = procs[quiet_i], ports[quiet_i]
        stopped, killed = [p for i, p in enumerate(procs) if i != quiet_i]
        wait_status(port, "/readyz", 200)

        asked = time.monotonic()
        assert q.quiet_worker(holder.name) is True
        assert q.quiet_worker(holder.name) is False  # already asked
        wait_for("state quiet", lambda: state_of(q, holder.name) == "quiet", timeout=20)
        learned = time.monotonic() - asked
        assert probe(port, "/readyz") == 503 and probe(port, "/livez") == 200
        print(f"quiet seen in the list after {learned:.2f}s")

        # six new jobs, four free slots elsewhere, one free on the quiet worker: it takes none
        later = [q.enqueue("f.slow", {"ms": 4_000}).id for _ in range(6)]
        seen_on_quiet: set[str] = set()

        def others_full() -> bool:
            infos = {w.pid: w for w in q.workers()}
            seen_on_quiet.update(infos[quieted.pid].running)
            return sum(len(set(later) & set(infos[p.pid].running))
                       for p in (stopped, killed)) == 4

        wait_for("four new jobs running on the two other workers", others_full)
        time.sleep(3 * LEARNS_S)
        others_full()
        assert seen_on_quiet <= {first}, seen_on_quiet
        wait_for("its running job finished", lambda: q.get(first) is None
                 or q.get(first).state not in ("ready", "reserved"), timeout=30)
        info = q.worker(holder.name)
        assert info is not None and info.state == "quiet" and quieted.poll() is None
        wait_for("the quiet worker shown with no job", lambda: q.worker(holder.name)
                 .running_count == 0)

        # stop through the CLI: it exits 0 after its graceful stop
        done = cli("workers", queue_name, "--stop", names[stopped.pid], "--url", redis_url)
        assert done.returncode == 0 and "asked worker" in done.stdout, done
        assert stopped.wait(30) == 0

        killed.send_signal(signal.SIGKILL)
        killed.wait(10)
        wait_for("the killed worker gone after its lease", lambda: names[killed.pid]
                 not in {w.name for w in q.workers()})
        assert [w.pid for w in q.workers()] == [quieted.pid]

        # a quiet worker can still be stopped: it exits 0 as well
        assert q.stop_worker(holder.name) is True
        assert quieted.wait(30) == 0


def test_an_unknown_worker_name_is_refused(redis_url: str, queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: [w.pid for w in listed(q)] == [worker.pid])
        with pytest.raises(sd.WorkerNotFound, match="no-such-worker") as caught:
            q.quiet_worker("no-such-worker")
        assert caught.value.field == "name"
        with pytest.raises(sd.WorkerNotFound):
            q.stop_worker("no-such-worker")
        q.reserve("p.topic", group="pullers", consumer="puller-1", wait=0)
        with pytest.raises(sd.WorkerNotFound, match="pull"):
            q.stop_worker("puller-1")
        for flag in ("--quiet", "--stop"):
            done = cli("workers", queue_name, flag, "no-such-worker", "--url", redis_url)
            assert done.returncode == 1, done
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "no-such-worker" in lines[0], done.stderr
        assert [w.state for w in q.workers() if w.kind == "worker"] == ["running"]
        assert worker.poll() is None
