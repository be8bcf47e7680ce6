"""Upgrading in place (docs/operations.md#upgrading-a-running-queue, docs/keys.md#versioning).

Compatibility between releases lives in the data: the ``layout`` field of each partition's
``meta`` hash and the fleet record (docs/keys.md#layouts, docs/keys.md#fleet), not in old script
files. So the test starts from the previous layout's keys written as data with plain Redis
commands (layout 1: whole records in the jobs hash while a job is in its stream, no ``layout``
field, no fleet record, a consumer that keeps no fleet entry and holds deliveries) and runs
today's worker processes and ``streamdelay migrate`` against them: every job of that data is
handled exactly once, ``migrate`` refuses while the stranger is live and moves the queue to
layout 2 once it is gone, after which a job in its stream keeps its body once and the layout-1
dead letters come back whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.keys import PartitionKeys
from tests.support.apps.reliability_app import ROOT, count, read_events
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(180)
GROUP = "workers"  # the group a Worker joins by default (consume/core/constants.py DEFAULT_GROUP)
PAD = "x" * 100


def blob(body: dict[str, Any], backoff: list[float] | None = None) -> bytes:
    """A job's envelope as every layout stores it (docs/keys.md#the-blob-envelope)."""
    return encode_blob("j", json.dumps(body).encode(), {}, backoff)


def record(state: str, due: int, ttr_ms: int, topic: str, body: dict[str, Any],
           entry: str = "", attempts: int = 0, backoff: list[float] | None = None) -> bytes:
    """A whole job record: ``state|attempts|due|created|ttr|max|entry|topic|blob`` (3 attempts
    at most)."""
    head = f"{state}|{attempts}|{due}|{due}|{ttr_ms}|3|{entry}|{topic}|"
    return head.encode() + blob(body, backoff)


def write_layout_1(c: redis.Redis, keys: PartitionKeys, now_ms: int) -> None:
    """The keys a queue of record layout 1 holds, written as data (docs/keys.md#keys): 20 dead
    letters, 20 deliveries of a consumer ``ghost`` that went away (ttr 1 s), 60 ready jobs, 200
    delayed jobs of ``fast`` and 40 of ``flaky`` (which succeeds on its third attempt)."""
    c.hset(keys.meta, "partitions", 1)  # no "layout" field: layout 1
    c.hset(keys.groups, mapping={"fast": GROUP, "flaky": GROUP})
    stream, dead = keys.stream("fast"), keys.dead("fast")
    c.xgroup_create(stream, GROUP, id="0", mkstream=True)
    c.xgroup_create(keys.stream("flaky"), GROUP, id="0", mkstream=True)
    for i in range(20):  # dead letters: whole record in state x, its dead-letter entry id
        job = f"dead-{i}"
        eid = c.xadd(dead, {"id": job, "error": "boom", "attempts": 3, "at": now_ms}).decode()
        c.hset(keys.jobs, job, record("x", now_ms, 60_000, "fast", {"pad": PAD}, eid, 3))
    # in the stream: the entry carries the delayed record it was promoted from, the jobs hash
    # the whole record in state s with the entry id (layout 1)
    for prefix, n, ttr_ms in (("stuck", 20, 1000), ("ready", 60, 60_000)):
        for i in range(n):
            job = f"{prefix}-{i}"
            delayed = record("d", now_ms, ttr_ms, "fast", {"pad": PAD})
            eid = c.xadd(stream, {"id": job, "rec": delayed}).decode()
            c.hset(keys.jobs, job, record("s", now_ms, ttr_ms, "fast", {"pad": PAD}, eid))
        if prefix == "stuck":  # read by a consumer that keeps no fleet entry, then silent
            assert len(c.xreadgroup(GROUP, "ghost", {stream: ">"}, count=n)[0][1]) == n
    delayed_jobs = [(f"delayed-{i}", "fast", now_ms + 1000 + 3000 * i // 200, {"pad": PAD})
                    for i in range(200)]
    delayed_jobs += [(f"flaky-{i}", "flaky", now_ms + 1000 + 2000 * i // 40,
                      {"succeed_on": 3, "pad": PAD}) for i in range(40)]
    for job, topic, due, body in delayed_jobs:
        c.hset(keys.jobs, job, record("d", due, 60_000, topic, body,
                                      backoff=[0.05] if topic == "flaky" else None))
        c.zadd(keys.delayed, {job: due})
        c.hincrby(keys.counts, topic, 1)


def header_only(raw: bytes) -> bool:
    """A record that ends with its 8th ``|``: layout 2 while in the stream."""
    return raw.split(b"|", 8)[8] == b""


class Worker:
    """A worker process of ``tests/support/apps/reliability_app.py`` (this tree)."""

    def __init__(self, url: str, queue: str, out: Path, name: str) -> None:
        self.log = out / f"{name}.log"
        args = [sys.executable, "-m", "tests.support.apps.reliability_app", url, queue, str(out),
                "--consumer", name, "--block", "0.2", "--reclaim", "0.5"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=log)

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


def wait_done(out: Path, expected: set[str], timeout: float = 60) -> None:
    """Until every job of ``expected`` was handled; then each exactly once."""
    deadline = time.monotonic() + timeout
    while not expected <= set(count(read_events(out), "done")):
        assert time.monotonic() < deadline, sorted(expected - set(
            count(read_events(out), "done")))[:10]
        time.sleep(0.1)
    done = count(read_events(out), "done")
    assert [i for i in expected if done[i] != 1] == []


def migrate(url: str, name: str, seen_within: str) -> subprocess.CompletedProcess[str]:
    """``streamdelay migrate`` of this tree."""
    return subprocess.run([sys.executable, "-m", "streamdelay", "migrate", name,
                           "--seen-within", seen_within],
                          env={**os.environ, "STREAMDELAY_URL": url}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_a_queue_left_on_layout_1_is_served_then_migrated_to_layout_2_every_job_once(
        tmp_path: Path, workers: list[Worker]) -> None:
    with RedisServer() as server:
        url, name, out = server.url, "layout", tmp_path
        with sd.Queue(name, url=url) as queue:
            keys, c = PartitionKeys(name, 0), queue.client
            seconds, micros = c.time()
            write_layout_1(c, keys, seconds * 1000 + micros // 1000)
            # today's reads take the data as it is
            got = queue.get("ready-3")
            assert got is not None and got.body == {"pad": PAD} and got.state == "ready"
            assert queue.get("stuck-0").state == "reserved"  # type: ignore[union-attr]
            assert len(queue.dead_list("fast")) == 20
            # the stranger holds deliveries and keeps no fleet entry: migrate names it
            refused = migrate(url, name, "60s")
            assert refused.returncode == 1 and "ghost" in refused.stderr, refused.stderr
            assert c.hget(keys.meta, "layout") is None  # nothing written
            # two processes of this release serve the layout-1 queue (both dispatch)
            first, second = Worker(url, name, out, "w1"), Worker(url, name, out, "w2")
            workers += [first, second]
            first.wait_ready(out)
            second.wait_ready(out)
            handled = ({f"stuck-{i}" for i in range(20)} | {f"ready-{i}" for i in range(60)}
                       | {f"delayed-{i}" for i in range(200)} | {f"flaky-{i}" for i in range(40)})
            wait_done(out, handled)
            assert not any(header_only(r) for r in c.hvals(keys.jobs))  # layout 1 kept
            starts = count(read_events(out), "start")  # retries carried every flaky job
            assert all(starts[f"flaky-{i}"] == 3 for i in range(40))
            first.process.send_signal(signal.SIGTERM)  # a rolling restart: drains and exits
            assert first.process.wait(30) == 0, first.log.read_text()
            # the ghost's deliveries were reclaimed; once it was silent past the window given,
            # migrate moves the queue while the other worker runs
            time.sleep(1.1)
            moved = migrate(url, name, "1s")
            assert moved.returncode == 0, moved.stderr
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
            # the layout-1 dead letters come back (whole records) next to retries on layout 2
            assert queue.dead_replay("fast") == 20
            queue.enqueue_many([sd.JobSpec("flaky", {"succeed_on": 3, "pad": "z"}, id=f"f2-{i}",
                                           backoff=[0.05]) for i in range(20)])
            queue.resume("fast")
            later = ({f"after-{i}" for i in range(50)} | {f"dead-{i}" for i in range(20)}
                     | {f"f2-{i}" for i in range(20)})
            wait_done(out, handled | later)
            starts = count(read_events(out), "start")
            assert all(starts[f"f2-{i}"] == 3 for i in range(20))
            deadline = time.monotonic() + 10  # the last acks go out in their batch
            while c.hlen(keys.jobs) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert c.hlen(keys.jobs) == 0 and c.xlen(keys.dead("fast")) == 0
            assert c.xlen(keys.dead("flaky")) == 0
