"""Pausing and resuming a topic: kept in Redis, seen by every worker process within 1 s, shown by
``stats``; three real ``streamdelay worker`` processes (tests/support/apps/pause_worker_app.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.consume.core import constants

pytestmark = pytest.mark.timeout(120)
WORKERS = 3


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real ``streamdelay`` command."""
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], capture_output=True,
                          text=True, timeout=60)


def starts(out: Path) -> list[tuple[str, str, float]]:
    """``(topic, job id, wall clock)`` of every handler start the workers recorded."""
    if not out.exists():
        return []
    rows = [line.split() for line in out.read_text().splitlines() if line.strip()]
    return [(topic, job, float(at)) for topic, job, at in rows]


def wait_for(predicate: object, timeout: float, what: str) -> None:
    """Poll ``predicate`` until it is true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def workers(redis_url: str, queue_name: str, tmp_path: Path) -> Iterator[Path]:
    """Three worker processes of tests.support.apps.pause_worker_app; yields their output file."""
    out = tmp_path / "starts.txt"
    env = {**os.environ, "PAUSE_APP_QUEUE": queue_name, "PAUSE_APP_OUT": str(out),
           "PAUSE_APP_PARTITIONS": "2"}
    procs = [subprocess.Popen([sys.executable, "-m", "streamdelay", "worker",
                               "tests.support.apps.pause_worker_app:worker", "--url", redis_url,
                               "--log-level", "warning"], env=env,
                              cwd=Path(__file__).resolve().parents[2])
             for _ in range(WORKERS)]
    try:
        yield out
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=20)


def test_no_job_of_a_paused_topic_starts_a_second_after_pause_and_resume_drains(
        workers: Path, redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, partitions=2)
    q.enqueue_many([sd.JobSpec("held", i, id=f"early-{i}") for i in range(20)])
    wait_for(lambda: len(starts(workers)) >= 20, 30, "the workers to run the first jobs")
    assert q.pause("held") is True
    paused_at = time.time()
    late: list[str] = []
    deadline = time.monotonic() + 3.0
    n = 0
    while time.monotonic() < deadline:  # jobs keep coming, due now, for 3 s
        q.enqueue_many([sd.JobSpec("held", n, id=f"late-{n}"), sd.JobSpec("other", n,
                                                                           id=f"other-{n}")])
        late.append(f"late-{n}")
        n += 1
        time.sleep(0.02)
    wait_for(lambda: sum(t == "other" for t, _, _ in starts(workers)) >= n, 30,
             "the other topic to keep running")
    stats = q.stats()
    assert stats.topics["held"].paused and not stats.topics["other"].paused
    assert stats.topics["held"].ready + stats.topics["held"].reserved > 0
    assert stats.topics["held"].lag_ms > 1000  # due jobs were promoted and wait
    too_late = [(job, at - paused_at) for topic, job, at in starts(workers)
                if topic == "held" and at > paused_at + 1.0]
    assert too_late == []
    assert q.pause("held") is False  # already paused: nothing changes
    assert q.resume("held") is True
    wait_for(lambda: {j for t, j, _ in starts(workers) if t == "held"} >= set(late), 30,
             "the paused backlog to drain after resume")
    assert q.stats().topics["held"].paused is False
    assert q.resume("held") is False
    q.close()


def test_a_pause_survives_worker_restarts_and_shows_in_stats_and_its_commands(
        redis_url: str, queue_name: str, tmp_path: Path) -> None:
    q = sd.Queue(queue_name, url=redis_url, partitions=2)
    q.enqueue("other", 0, id="known")
    paused = cli("pause", queue_name, "held", "--url", redis_url, "--partitions", "2")
    assert paused.returncode == 0 and paused.stdout.strip() == "paused held"
    q.enqueue_many([sd.JobSpec("held", i, id=f"h{i}") for i in range(5)])
    out = tmp_path / "starts.txt"
    env = {**os.environ, "PAUSE_APP_QUEUE": queue_name, "PAUSE_APP_OUT": str(out),
           "PAUSE_APP_PARTITIONS": "2"}
    proc = subprocess.Popen([sys.executable, "-m", "streamdelay", "worker",
                             "tests.support.apps.pause_worker_app:worker", "--url", redis_url],
                            env=env, cwd=Path(__file__).resolve().parents[2])
    try:
        wait_for(lambda: any(j == "known" for _, j, _ in starts(out)), 30, "a fresh worker")
        time.sleep(1.0)
        assert [j for t, j, _ in starts(out) if t == "held"] == []  # started paused
        text = cli("stats", queue_name, "--url", redis_url, "--partitions", "2")
        assert "paused: held" in text.stdout.splitlines()
        as_json = json.loads(cli("stats", queue_name, "--json", "--url", redis_url,
                                 "--partitions", "2").stdout)
        assert as_json["topics"]["held"]["paused"] is True
        assert as_json["topics"]["other"]["paused"] is False
        resumed = cli("resume", queue_name, "held", "--url", redis_url, "--partitions", "2")
        assert resumed.returncode == 0 and resumed.stdout.strip() == "resumed held"
        wait_for(lambda: len([j for t, j, _ in starts(out) if t == "held"]) == 5, 30,
                 "the held jobs after resume")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    again = cli("resume", queue_name, "held", "--url", redis_url, "--partitions", "2")
    assert again.returncode == 0 and "was not paused" in again.stdout
    ghost = cli("pause", queue_name + "-none", "held", "--url", redis_url)
    assert ghost.returncode == 1 and "no such queue" in ghost.stderr
    bad = cli("pause", queue_name, "a|b", "--url", redis_url, "--partitions", "2")
    assert bad.returncode == 2 and "topic" in bad.stderr
    q.close()


def test_an_entry_a_waiting_read_returns_after_the_pause_is_handed_back_not_run(
        redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    ran: list[tuple[str, int]] = []
    worker = sd.Worker(q, block=5.0)  # its reads wait 5 s: one is waiting when the pause lands

    @worker.handler("held")
    async def held(job: sd.Job) -> None:
        ran.append((job.id, job.attempt))

    async def scenario() -> None:
        serving = asyncio.create_task(worker.serve())
        await asyncio.sleep(1.0)  # registered, its read of "held" waiting
        q.pause("held")
        await asyncio.sleep(2 * constants.REFRESH_S + 0.2)  # the worker knows; its read still waits
        assert worker.paused == {"held"}
        q.enqueue("held", 1, id="caught")  # promoted at once: the waiting read returns it
        await asyncio.sleep(1.5)
        assert ran == [] and worker.counts["released"] == 1
        info = q.get("caught")
        assert info is not None and (info.state, info.attempts) == ("ready", 0)
        q.resume("held")
        for _ in range(100):
            if ran:
                break
            await asyncio.sleep(0.05)
        worker.stop()
        await serving

    asyncio.run(scenario())
    assert ran == [("caught", 1)]  # not counted as an attempt
    q.close()
