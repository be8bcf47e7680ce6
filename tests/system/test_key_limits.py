"""Key limits (docs/limits.md#key-limits) held by two real ``streamdelay worker`` processes and
a ``reserve`` consumer together, on a queue of 2 partitions, including after a ``kill -9`` of a
process holding leases of several keys (every job has a 2 s ttr): those leases lapse one ttr
after that process's last heartbeat and the keys' other jobs run, never two of a key at once
(tests/support/apps/key_worker_app.py). The runs are compared on the server clock
(tests/support/runs.py), the killed process's ending at its kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import partition_of
from tests.integration.test_pull import promote
from tests.support.runs import overlaps, peaks, record, server_us
from tests.support.runs import runs as read_runs

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]
KEYS = [f"tenant-{i}" for i in range(6)]


def starts(out: Path) -> list[tuple[str, int, int]]:
    """``(job id, attempt, pid)`` of every handler start the workers recorded."""
    rows = []
    for line in (out.read_text().splitlines() if out.exists() else []):
        parts = line.split()
        if len(parts) == 3:
            rows.append((parts[0], int(parts[1]), int(parts[2])))
    return rows


def wait_for(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_key_concurrency_holds_across_processes_and_reserve_and_after_a_kill(
        redis_url: str, queue_name: str, tmp_path: Path) -> None:
    out = tmp_path / "starts.txt"
    env = {**os.environ, "KEY_APP_QUEUE": queue_name, "KEY_APP_OUT": str(out),
           "KEY_APP_URL": redis_url}
    q = sd.Queue(queue_name, url=redis_url, partitions=2)
    q.limit("keyed", key_concurrency=1)
    client = redis.Redis.from_url(redis_url)
    log = f"{queue_name}:runs"  # every run's start and end on the server clock
    # the stuck key's first job hangs in the process that takes it, which is then killed
    q.enqueue("keyed", "hang", id="s0", key="stuck", ttr=2)
    q.enqueue_many([sd.JobSpec("keyed", "work", id=f"s{i}", key="stuck", ttr=2)
                    for i in range(1, 4)])
    q.enqueue_many([sd.JobSpec("keyed", "work", id=f"j{i}", key=KEYS[i % len(KEYS)], ttr=2)
                    for i in range(60)])
    assert len({partition_of(f"{{{k}}}x", 2) for k in KEYS}) == 2  # both partitions serve
    procs = [subprocess.Popen([sys.executable, "-m", "streamdelay", "worker",
                               "tests.support.apps.key_worker_app:worker", "--url", redis_url,
                               "--log-level", "warning"], env=env, cwd=ROOT)
             for _ in range(2)]
    stop = threading.Event()
    reserved: list[tuple[str, int]] = []

    errors: list[BaseException] = []

    def consume() -> None:  # a pull consumer of the same group, counted like a handler
        try:
            pull()
        except BaseException as exc:
            errors.append(exc)

    def pull() -> None:
        mine = sd.Queue(queue_name, url=redis_url, partitions=2)
        while not stop.is_set():
            for r in mine.reserve("keyed", group="key-app", consumer="puller", count=2,
                                  wait=0.2):
                run = (r.id[1:r.id.index("}")], f"{r.id}:{r.attempt}", "puller")
                record(client, log, "start", *run)
                time.sleep(0.03)
                record(client, log, "end", *run)
                reserved.append((r.id, r.attempt))
                r.ack()
        mine.close()

    puller = threading.Thread(target=consume, daemon=True)
    try:
        hang = "{stuck}s0"
        wait_for(lambda: any(jid == hang for jid, _, _ in starts(out)), 30, "the hang to start")
        holder = next(pid for jid, _, pid in starts(out) if jid == hang)
        victim = next(p for p in procs if p.pid == holder)
        victim.send_signal(signal.SIGKILL)
        killed = {str(holder): server_us(client)}  # its runs without an end end here
        victim.wait(10)
        procs.remove(victim)
        puller.start()  # from now on a reserve consumer takes its share too
        procs.append(subprocess.Popen([sys.executable, "-m", "streamdelay", "worker",
                                       "tests.support.apps.key_worker_app:worker", "--url",
                                       redis_url, "--log-level", "warning"], env=env, cwd=ROOT))

        def done() -> bool:
            row = q.stats().topics.get("keyed")
            return row is not None and row.delayed + row.ready + row.reserved == 0
        wait_for(lambda: done() or bool(errors), 60, "every job to run")
        assert not errors
    finally:
        stop.set()
        if puller.is_alive():
            puller.join(10)
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(20)
    runs = [(jid, attempt) for jid, attempt, _ in starts(out)] + reserved
    ran = {jid for jid, _ in runs}
    assert ran == {f"{{stuck}}s{i}" for i in range(4)} | {
        f"{{{KEYS[i % len(KEYS)]}}}j{i}" for i in range(60)}
    found = read_runs(client, log, killed)
    assert {r.group for r in found} == {"stuck", *KEYS}
    # never two jobs of a key at once (the runs of each key on the server clock)
    assert max(peaks(found).values()) == 1, overlaps(found, 1)
    # the hung job ran again after its ttr (attempt 2), and the stuck key's other jobs ran
    assert ("{stuck}s0", 2) in runs
    q.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_cli_sets_shows_and_clears_key_limits_and_stats_shows_them_and_the_top_keys(
        redis_url: str, queue_name: str) -> None:
    done = cli("limit", queue_name, "report", "--key-concurrency", "2", "--key-rate", "10/m",
               "--url", redis_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "report: key rate 10/m, key concurrency 2"
    q = sd.Queue(queue_name, url=redis_url)
    q.enqueue_many([sd.JobSpec("report", {}, id=f"r{i}", key="acme") for i in range(3)]
                   + [sd.JobSpec("report", {}, id="b", key="bolt")])
    promote(q, 4)  # ready, in the lanes of their keys
    stats = cli("stats", queue_name, "--url", redis_url).stdout.splitlines()
    assert "key limit: report each key 10/m, 2 at once" in stats
    assert "ready by key: report acme 3, bolt 1" in stats
    shown = cli("limit", queue_name, "report", "--url", redis_url, "--json")
    assert json.loads(shown.stdout)["key_concurrency"] == 2
    assert cli("limit", queue_name, "report", "--clear", "--url", redis_url).stdout.strip() == (
        "report: no limit")
    q.close()


@pytest.mark.parametrize("args", [["--key-rate", "lots"], ["--key-concurrency", "0"],
                                  ["--clear", "--key-rate", "1/s"]])
def test_cli_refuses_bad_key_limits_in_one_line(redis_url: str, queue_name: str,
                                                args: list[str]) -> None:
    done = cli("limit", queue_name, "report", *args, "--url", redis_url)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "key" in done.stderr
