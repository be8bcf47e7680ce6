"""A mixed-version fleet never loses a job (docs/operations.md#upgrading-a-running-queue): the
archived layout 1 release (tests/support/data, ``LAYOUT1_COMMIT``) serves a queue that THIS release
created (Redis lost its data, a queue named at run time), next to this release's workers,
through the rolling-deploy steps: old fleet, mixed fleet (``migrate`` refused, naming the old
consumer), new fleet (the old worker hands its jobs back at SIGTERM), ``migrate``. The old
release's retries, hand-backs and reclaims keep every body; every job runs to success once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from streamdelay.redis_io.steps import run_step_sync
from tests.support.apps.reliability_app import ROOT, count, read_events
from tests.support.redis_server import RedisServer
from tests.system.test_upgrade import Worker, layout1_code, wait_done, workers

__all__ = ["layout1_code", "workers"]  # fixtures shared with test_upgrade.py
pytestmark = pytest.mark.timeout(180)
TOPICS = ("fast", "flaky", "slow")
PAD = "x" * 100


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one of this release's scripts directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def no_dead_letters(client: redis.Redis, keys: PartitionKeys) -> None:
    """Fail at once, with the recorded errors, when any job of the queue went dead."""
    for topic in TOPICS:
        dead = client.xrange(keys.dead(topic))
        assert dead == [], [(f[b"id"], f[b"error"][:120]) for _, f in dead]


def wait_for(what: str, check: Any, client: redis.Redis, keys: PartitionKeys,
             timeout: float = 60) -> None:
    """Until ``check()`` holds; fails early when a job went dead (a body was lost)."""
    deadline = time.monotonic() + timeout
    while not check():
        no_dead_letters(client, keys)
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    no_dead_letters(client, keys)


def migrate(url: str, name: str, *options: str) -> subprocess.CompletedProcess[str]:
    """``streamdelay migrate`` of this release."""
    return subprocess.run([sys.executable, "-m", "streamdelay", "migrate", name, *options],
                          env={**os.environ, "STREAMDELAY_URL": url}, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def flaky(prefix: str, n: int) -> list[sd.JobSpec]:
    """Jobs that fail twice (retried by whichever worker takes them) and then succeed."""
    return [sd.JobSpec("flaky", {"succeed_on": 3, "pad": PAD}, id=f"{prefix}{i}",
                       backoff=[0.05]) for i in range(n)]


def test_the_archived_release_next_to_this_one_through_a_rolling_deploy_loses_no_job(
        layout1_code: Path, tmp_path: Path, workers: list[Worker]) -> None:
    with RedisServer() as server, sd.Queue("fleet", url=server.url) as queue:
        url, name, out, c = server.url, "fleet", tmp_path, queue.client
        keys = PartitionKeys(name, 0)
        # this release creates the queue: jobs that a consumer took and then went away with
        queue.enqueue_many([sd.JobSpec("fast", {"pad": PAD}, id=f"stuck-{i}", ttr=1)
                            for i in range(20)])
        assert c.hget(keys.meta, "layout") in (None, b"1")  # never a layout the fleet can't read
        call(c, "registerGroup", keys, ["workers", "fast"])
        moved, deadline = 0, time.monotonic() + 5
        while moved < 20:
            moved += call(c, "promoteDueV2", keys, [100])[0]
            assert time.monotonic() < deadline
        c.xreadgroup("workers", "ghost", {keys.stream("fast"): ">"}, count=20)
        # 1. old fleet: the archived release alone retries, reclaims the ghost's jobs, and
        # starts slow jobs it will hand back at SIGTERM
        old = Worker(url, name, out, "old", layout1_code, "--grace", "0.3")
        workers.append(old)
        old.wait_ready(out)
        queue.enqueue_many([*flaky("flaky-", 30),
                            *(sd.JobSpec("fast", {"pad": PAD}, id=f"ready-{i}")
                              for i in range(30)),
                            *(sd.JobSpec("slow", {"seconds": 60, "pad": PAD}, id=f"slow-{i}")
                              for i in range(10))])
        first = ({f"stuck-{i}" for i in range(20)} | {f"ready-{i}" for i in range(30)}
                 | {f"flaky-{i}" for i in range(30)})
        wait_for("old fleet", lambda: first <= set(count(read_events(out), "done"))
                 and len({e.id for e in read_events(out) if e.ev == "start"
                          and e.id.startswith("slow-")}) == 10, c, keys)
        # 2. mixed fleet: a new worker joins; migrate is refused while the old one is live
        new = Worker(url, name, out, "new", None, "--sleep-cap", "0.2")
        workers.append(new)
        new.wait_ready(out)
        refused = migrate(url, name)
        assert refused.returncode == 1, refused.stdout
        assert "'old'" in refused.stderr and "'new'" not in refused.stderr, refused.stderr
        assert c.hget(keys.meta, "layout") in (None, b"1")
        queue.enqueue_many(flaky("mixed-", 30))
        second = {f"mixed-{i}" for i in range(30)}
        wait_for("mixed fleet", lambda: second <= set(count(read_events(out), "done")), c, keys)
        # 3. new fleet: the old worker hands its slow jobs back at SIGTERM, the new one runs them
        old.process.send_signal(signal.SIGTERM)
        assert old.process.wait(30) == 0, old.log.read_text()
        third = {f"slow-{i}" for i in range(10)}
        wait_for("hand-back", lambda: third <= set(count(read_events(out), "done")), c, keys)
        # 4. migrate, once the old consumer has been silent for the window given
        time.sleep(1.2)
        done = migrate(url, name, "--seen-within", "1")
        assert done.returncode == 0, done.stderr
        assert c.hget(keys.meta, "layout") == b"2"
        queue.enqueue_many(flaky("after-", 30))
        wait_done(out, first | second | third | {f"after-{i}" for i in range(30)})
        no_dead_letters(c, keys)
        events = read_events(out)
        assert {e.pid for e in events if e.ev == "done" and e.id.startswith("flaky-")} \
            == {old.process.pid}  # the old release did the retries of phase 1
        starts = count(events, "start")
        assert all(starts[f"{p}{i}"] == 3 for p in ("flaky-", "mixed-", "after-")
                   for i in range(30))
        deadline = time.monotonic() + 10  # the last acks go out in their batch
        while c.hlen(keys.jobs) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.hlen(keys.jobs) == 0
