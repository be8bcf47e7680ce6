"""Upgrading in place (docs/operations.md#upgrading-a-running-queue): a queue filled and served
by the previous release keeps working while processes of this one roll in. The previous
release's code is taken from tests/data (``git archive`` of ``V1_COMMIT``) and run with the
same interpreter, ahead of this tree on ``sys.path``; every job, whichever version enqueued,
promoted or handled it, is handled exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.apps.reliability_app import ROOT, count, read_events
from tests.redis_server import RedisServer

pytestmark = pytest.mark.timeout(180)
V1_COMMIT = "3fcfe6b"  # the last commit before the one-job enqueue script and the batched ack
V1_ARCHIVE = ROOT / "tests" / "data" / f"release-{V1_COMMIT}.tar.gz"


@pytest.fixture(scope="module")
def v1_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's ``streamdelay`` package and ``lua`` scripts: ``git archive`` of
    ``V1_COMMIT``, kept in tests/data so a shallow clone runs the test too."""
    out = tmp_path_factory.mktemp("v1")
    with tarfile.open(V1_ARCHIVE, "r:gz") as tar:
        tar.extractall(out, filter="data")
    return out


def v1_env(v1: Path) -> dict[str, str]:
    """The environment of a process that imports the previous release."""
    return {**os.environ, "PYTHONPATH": f"{v1}{os.pathsep}{ROOT}"}


class Worker:
    """A worker process of ``tests/apps/reliability_app.py``, on either release."""

    def __init__(self, url: str, queue: str, out: Path, name: str, v1: Path | None) -> None:
        self.log = out / f"{name}.log"
        args = [sys.executable, "-m", "tests.apps.reliability_app", url, queue, str(out),
                "--consumer", name, "--block", "0.2"]
        with self.log.open("ab") as log:  # the old one runs in its own tree, first on sys.path
            self.process = subprocess.Popen(args, cwd=v1 or ROOT, stdout=log, stderr=log,
                                            env=v1_env(v1) if v1 else None)

    def wait_ready(self, out: Path, timeout: float = 30.0) -> None:
        """Until it has registered its group."""
        deadline = time.monotonic() + timeout
        pid = self.process.pid
        while not any(e.ev == "ready" and e.pid == pid for e in read_events(out)):
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    """Worker processes killed at the end of the test if still running."""
    started: list[Worker] = []
    yield started
    for w in started:
        if w.process.poll() is None:
            w.process.kill()
            w.process.wait(10)


def v1_enqueue(v1: Path, url: str, queue: str, prefix: str, n: int, spread: float) -> None:
    """Enqueue ``n`` jobs with the previous release: half one by one, half in one call."""
    code = (
        "import sys, streamdelay as sd\n"
        f"assert sd.__file__.startswith({str(v1)!r}), sd.__file__\n"
        f"q = sd.Queue({queue!r}, url={url!r})\n"
        f"n, spread = {n}, {spread}\n"
        f"for i in range(n // 2): q.enqueue('fast', i, id=f'{prefix}{{i}}', delay=spread * i / n)\n"
        f"q.enqueue_many([sd.JobSpec('fast', i, id=f'{prefix}{{i}}', delay=spread * i / n)"
        f" for i in range(n // 2, n)])\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=v1, env=v1_env(v1), check=True, timeout=60)


def v1_sha(v1: Path, name: str) -> str:
    """The SHA-1 of the previous release's script ``name``."""
    code = f"from streamdelay.protocol.scripts import script; print(script({name!r}).sha)"
    return subprocess.run([sys.executable, "-c", code], cwd=v1, env=v1_env(v1), check=True,
                          capture_output=True, text=True, timeout=60).stdout.strip()


def test_a_rolling_deploy_from_the_previous_release_handles_every_job_once(
        v1_code: Path, tmp_path: Path, workers: list[Worker]) -> None:
    with RedisServer() as server:
        url, name, out = server.url, "upgrade", tmp_path
        old = Worker(url, name, out, "old", v1_code)
        workers.append(old)
        old.wait_ready(out)
        v1_enqueue(v1_code, url, name, "v1-", 200, 2.0)  # due over the next 2 s
        v1_enqueue(v1_code, url, name, "late-", 60, 0.1)
        with sd.Queue(name, url=url) as queue:  # this release's producer meanwhile
            for i in range(100):
                queue.enqueue("fast", i, id=f"v2-{i}", delay=2.0 * i / 100)
            queue.enqueue_many([sd.JobSpec("fast", i, id=f"v2m-{i}", delay=1.0 + i / 100)
                                for i in range(100)])
            new = Worker(url, name, out, "new", None)
            workers.append(new)
            new.wait_ready(out)
            old.process.send_signal(signal.SIGTERM)  # rolled: the old process drains and exits
            assert old.process.wait(30) == 0, old.log.read_text()
            # jobs of the old producer enqueued after the old worker left
            v1_enqueue(v1_code, url, name, "after-", 40, 0.5)
            expected = ({f"v1-{i}" for i in range(200)} | {f"late-{i}" for i in range(60)}
                        | {f"v2-{i}" for i in range(100)} | {f"v2m-{i}" for i in range(100)}
                        | {f"after-{i}" for i in range(40)})
            deadline = time.monotonic() + 60
            while set(count(read_events(out), "done")) < expected:
                assert time.monotonic() < deadline, sorted(expected - set(
                    count(read_events(out), "done")))[:10]
                time.sleep(0.1)
            done = count(read_events(out), "done")
            assert set(done) == expected
            assert [i for i, c in done.items() if c != 1] == []
            by_pid = {e.pid for e in read_events(out) if e.ev == "done"}
            assert by_pid == {old.process.pid, new.process.pid}  # both releases handled jobs
            jobs_keys = [PartitionKeys(name, p).jobs for p in range(queue.config.partitions)]
            deadline = time.monotonic() + 10  # the last acks go out in their batch
            while (sum(queue.client.hlen(k) for k in jobs_keys)
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            assert sum(queue.client.hlen(k) for k in jobs_keys) == 0
            # both releases really ran: each one's own ackJobs text is in the script cache
            old_ack = v1_sha(v1_code, "ackJobs")
            assert old_ack != script("ackJobs").sha
            assert queue.client.script_exists(old_ack, script("ackJobs").sha,
                                              script("enqueueJobV2").sha) == [True, True, True]
            stats = queue.stats()
            assert all(t.delayed == 0 and t.ready == 0 and t.reserved == 0
                       for t in stats.topics.values()), stats
