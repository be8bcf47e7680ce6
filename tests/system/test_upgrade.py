"""Upgrading in place (docs/operations.md#upgrading-a-running-queue): a queue filled and served
by an older release keeps working while processes of this one roll in. The older releases'
code is taken from tests/support/data (``git archive`` of ``V1_COMMIT``, and of
``LAYOUT1_COMMIT``, the last commit of record layout 1) and run with the same interpreter,
ahead of this tree on ``sys.path``; every job, whichever version enqueued, promoted or handled
it, is handled exactly once, and after ``streamdelay migrate`` a job in its stream
keeps its body once."""

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
from tests.support.apps.reliability_app import ROOT, count, read_events
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(180)
V1_COMMIT = "3fcfe6b"  # the last commit before the one-job enqueue script and the batched ack
LAYOUT1_COMMIT = "63b32df"  # the last commit of record layout 1 (docs/keys.md#layouts)
# tests/support/data/release-<commit>.tar.gz: git archive --format=tar.gz <commit> streamdelay lua
# (for LAYOUT1_COMMIT with ':(exclude)streamdelay/web': the workers here need no web code)


def unpack(tmp_path_factory: pytest.TempPathFactory, commit: str) -> Path:
    """An older release's ``streamdelay`` package and ``lua`` scripts: ``git archive`` of
    ``commit``, kept in tests/support/data so a shallow clone runs the test too."""
    out = tmp_path_factory.mktemp(f"v1-{commit}")
    archive = ROOT / "tests" / "support" / "data" / f"release-{commit}.tar.gz"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(out, filter="data")
    return out


@pytest.fixture(scope="module")
def v1_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release of ``V1_COMMIT``."""
    return unpack(tmp_path_factory, V1_COMMIT)


@pytest.fixture(scope="module")
def layout1_code(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release of ``LAYOUT1_COMMIT``."""
    return unpack(tmp_path_factory, LAYOUT1_COMMIT)


def v1_env(v1: Path) -> dict[str, str]:
    """The environment of a process that imports the previous release."""
    return {**os.environ, "PYTHONPATH": f"{v1}{os.pathsep}{ROOT}"}


class Worker:
    """A worker process of ``tests/support/apps/reliability_app.py``, on either release."""

    def __init__(self, url: str, queue: str, out: Path, name: str, v1: Path | None,
                 *options: str) -> None:
        self.log = out / f"{name}.log"
        args = [sys.executable, "-m", "tests.support.apps.reliability_app", url, queue, str(out),
                "--consumer", name, "--block", "0.2", *options]
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
            assert old_ack != script("ackJobsV3").sha
            assert queue.client.script_exists(old_ack, script("ackJobsV3").sha,
                                              script("enqueueJobV2").sha) == [True, True, True]
            stats = queue.stats()
            assert all(t.delayed == 0 and t.ready == 0 and t.reserved == 0
                       for t in stats.topics.values()), stats


LAYOUT1_FILL = """
import time, streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from streamdelay.redis_io.runner import run_step_sync  # the older release's module
assert sd.__file__.startswith(V1), sd.__file__
q = sd.Queue(NAME, url=URL)
c, k = q.client, PartitionKeys(NAME, 0)
def call(name, args):
    return run_step_sync(c, script(name).call(k.script_keys(), args))
def promote(n):
    moved = 0
    while moved < n:
        moved += call("promoteDue", [1000])[0]
        time.sleep(0.002)
pad = "x" * 100
call("registerGroup", ["workers", "fast"])
q.enqueue_many([sd.JobSpec("fast", {"pad": pad}, id=f"dead-{i}") for i in range(20)]
               + [sd.JobSpec("fast", {"pad": pad}, id=f"stuck-{i}", ttr=1) for i in range(20)])
promote(40)
read = c.xreadgroup("workers", "ghost", {k.stream("fast"): ">"}, count=40)[0][1]
for eid, f in read:  # dead letters; the stuck ones stay with a consumer that went away
    if f[b"id"].startswith(b"dead-"):
        assert call("failJob", ["workers", "fast", f[b"id"], eid, 0, "1", "boom"])[0] == 2
q.enqueue_many([sd.JobSpec("fast", {"pad": pad}, id=f"ready-{i}") for i in range(60)])
promote(60)
q.enqueue_many([sd.JobSpec("fast", {"pad": pad}, id=f"delayed-{i}", delay=1 + 3 * i / 200)
                for i in range(200)]
               + [sd.JobSpec("flaky", {"succeed_on": 3, "pad": pad}, id=f"flaky-{i}",
                             delay=1 + 2 * i / 40, backoff=[0.05]) for i in range(40)])
"""


def header_only(raw: bytes) -> bool:
    """A record that ends with its 8th ``|``: layout 2 while in the stream."""
    return raw.split(b"|", 8)[8] == b""


def wait_done(out: Path, expected: set[str], timeout: float = 60) -> None:
    """Until every job of ``expected`` was handled; then each exactly once."""
    deadline = time.monotonic() + timeout
    while not expected <= set(count(read_events(out), "done")):
        assert time.monotonic() < deadline, sorted(expected - set(
            count(read_events(out), "done")))[:10]
        time.sleep(0.1)
    done = count(read_events(out), "done")
    assert [i for i in expected if done[i] != 1] == []


def test_a_mixed_fleet_on_layout_1_then_migrate_to_layout_2_handles_every_job_once(
        layout1_code: Path, tmp_path: Path, workers: list[Worker]) -> None:
    with RedisServer() as server:
        url, name, out = server.url, "layout", tmp_path
        code = f"V1, NAME, URL = {str(layout1_code)!r}, {name!r}, {url!r}\n" + LAYOUT1_FILL
        subprocess.run([sys.executable, "-c", code], cwd=layout1_code, env=v1_env(layout1_code),
                       check=True, timeout=60)
        with sd.Queue(name, url=url) as queue:
            keys = PartitionKeys(name, 0)
            c = queue.client
            assert c.hget(keys.meta, "layout") is None  # created by layout 1 code
            assert c.xlen(keys.dead("fast")) == 20 and c.xlen(keys.stream("fast")) == 80
            assert not any(header_only(r) for r in c.hvals(keys.jobs))
            # a rolling deploy: one old and one new worker process side by side (both dispatch)
            old = Worker(url, name, out, "old", layout1_code)
            new = Worker(url, name, out, "new", None)
            workers += [old, new]
            old.wait_ready(out)
            new.wait_ready(out)
            first = ({f"stuck-{i}" for i in range(20)} | {f"ready-{i}" for i in range(60)}
                     | {f"delayed-{i}" for i in range(200)} | {f"flaky-{i}" for i in range(40)})
            wait_done(out, first)
            assert not any(header_only(r) for r in c.hvals(keys.jobs))  # layout 1 kept
            events = read_events(out)
            by_pid = {e.pid for e in events if e.ev == "done"}
            assert by_pid == {old.process.pid, new.process.pid}  # both releases handled jobs
            starts = count(events, "start")  # every flaky job ran 3 times: retries carried it
            assert all(starts[f"flaky-{i}"] == 3 for i in range(40))
            old.process.send_signal(signal.SIGTERM)  # rolled: the old process drains and exits
            assert old.process.wait(30) == 0, old.log.read_text()
            # migrate while the new worker runs, once the old consumer was silent for the
            # window given (docs/keys.md#fleet)
            time.sleep(1.1)
            done = subprocess.run([sys.executable, "-m", "streamdelay", "migrate", name,
                                   "--seen-within", "1s"],
                                  env={**os.environ, "STREAMDELAY_URL": url}, cwd=ROOT,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert c.hget(keys.meta, "layout") == b"2"
            # new promotions are header-only: watched while the topic is paused
            queue.pause("fast")
            time.sleep(1.1)  # workers see the pause within 1 s
            queue.enqueue_many([sd.JobSpec("fast", {"pad": "y" * 100}, id=f"after-{i}")
                                for i in range(50)])
            deadline = time.monotonic() + 10
            while queue.stats().topics["fast"].ready < 50:
                assert time.monotonic() < deadline, queue.stats()
                time.sleep(0.05)
            for i in range(50):
                raw = c.hget(keys.jobs, f"after-{i}")
                assert raw is not None and raw.startswith(b"s|") and header_only(raw)
            after = queue.get("after-7")
            assert after is not None and after.body == {"pad": "y" * 100}
            # the old dead letters come back (whole records) next to retries on layout 2
            assert queue.dead_replay("fast") == 20
            queue.enqueue_many([sd.JobSpec("flaky", {"succeed_on": 3, "pad": "z"}, id=f"f2-{i}",
                                           backoff=[0.05]) for i in range(20)])
            queue.resume("fast")
            second = ({f"after-{i}" for i in range(50)} | {f"dead-{i}" for i in range(20)}
                      | {f"f2-{i}" for i in range(20)})
            wait_done(out, first | second)
            starts = count(read_events(out), "start")
            assert all(starts[f"f2-{i}"] == 3 for i in range(20))
            deadline = time.monotonic() + 10  # the last acks go out in their batch
            while c.hlen(keys.jobs) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert c.hlen(keys.jobs) == 0 and c.xlen(keys.dead("fast")) == 0
            assert c.xlen(keys.dead("flaky")) == 0
