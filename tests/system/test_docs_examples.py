"""The documentation runs: every example in docs/examples/ against a real redis-server, the code
blocks copied into the pages equal the files, the redis-cli recipe of docs/keys.md enqueues a
job a worker can read, and ``mkdocs build --strict`` passes (no broken links).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
MARKER = re.compile(r"<!-- (example|tested): ([\w.-]+) -->\n```(\w+)\n(.*?)```", re.DOTALL)


@pytest.fixture
def example_env(own_redis: RedisServer) -> Iterator[dict[str, str]]:
    """Environment for an example: its own redis-server in ``STREAMDELAY_URL``."""
    env = dict(os.environ)
    env["STREAMDELAY_URL"] = own_redis.url
    env["PYTHONUNBUFFERED"] = "1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("STREAMDELAY_PARTITIONS", None)
    yield env


def run_example(name: str, env: dict[str, str], timeout: float = 90) -> str:
    """Run ``docs/examples/<name>`` as a program; return its stdout (exit 0 required)."""
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=EXAMPLES, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_producer_example(example_env: dict[str, str]) -> None:
    out = run_example("producer.py", example_env).splitlines()
    assert out == [
        "enqueued close-42: created=True, state=delayed",
        "enqueued close-42 again: created=False (nothing changed)",
        "get close-42: state=delayed, body={'order_id': 42}, due 2s after it was created",
        "enqueue_many: [('close-43', True), ('close-44', True)]",
        "reschedule close-44 to 3s from now: True",
        "cancel close-43 (it was paid): True",
        "cancel close-43 again: False",
        "stats: delayed=2, ready=0, reserved=0",
    ]


def test_worker_until_idle_example_runs_jobs_in_due_order(example_env: dict[str, str]) -> None:
    out = run_example("worker_until_idle.py", example_env).splitlines()
    assert out[:3] == [
        "email to ada@example.com, job email-1, attempt 1",
        "sms to +15550100, job sms-1, attempt 1",
        "email to alan@example.com, job email-2, attempt 1 (traced)",
    ]
    assert out[3].startswith("idle: {'handled': 3, 'retried': 0, 'dead': 0")


def test_schedule_example_fires_one_job_per_tick(example_env: dict[str, str]) -> None:
    out = run_example("schedule.py", example_env).splitlines()
    assert out == [
        "declared: True",
        "declared again: False",
        "schedules: ['heartbeat', 'nightly-report']",
        "tick 1 of heartbeat: {'target': 'db'}",
        "tick 2 of heartbeat: {'target': 'db'}, 1000 ms after the one before",
        "tick 3 of heartbeat: {'target': 'db'}, 1000 ms after the one before",
        "unschedule: True True",
        "schedules: []",
    ]


def test_limited_worker_example_holds_its_limits(example_env: dict[str, str]) -> None:
    out = run_example("limited_worker.py", example_env).splitlines()
    assert out == [
        "handled 25 calls, at most 2 at once",
        "the 25th call started 1.2 s or more after the first: True",
        "stats: rate 10/s, concurrency 2, 0 running now",
        "limits after clearing: {}",
    ]


def test_priorities_example_runs_urgent_first_and_keys_in_turns(
        example_env: dict[str, str]) -> None:
    out = run_example("priorities.py", example_env).splitlines()
    assert out == [
        "started: {big-corp}r9 {small-shop}r0 {tiny-inc}r0 {big-corp}r0 {big-corp}r1 "
        "{big-corp}r2 {big-corp}r3 {big-corp}r4",
        "stats: staged True, each key 1 at once, 0 ready",
    ]


def test_retry_dead_example(example_env: dict[str, str]) -> None:
    out = run_example("retry_dead.py", example_env).splitlines()
    assert out == [
        "busy-1: ran on attempts [1, 2]",
        "doomed-1: ran on attempts [1, 2, 3]",
        "flaky-1: ran on attempts [1, 2, 3]",
        "invalid-1: ran on attempts [1]",
        "dead: doomed-1 after 3 attempts: RuntimeError: https://example.com/b answered 503",
        "get doomed-1: state=dead, attempts=3",
        "replayed: 1",
        "get doomed-1: state=delayed, attempts=0",
    ]


def test_async_example(example_env: dict[str, str]) -> None:
    out = run_example("async_producer.py", example_env).splitlines()
    assert out == [
        "enqueued a-1: created=True",
        "enqueued: ['a-2', 'a-3']",
        "get a-1: state=delayed, body={'patient': 'p-1'}",
        "reminded: ['a-1', 'a-2', 'a-3']",
    ]


def test_foreign_producer_example_enqueues_a_job_the_library_reads(
    example_env: dict[str, str],
) -> None:
    out = run_example("foreign_producer.py", example_env).splitlines()
    match = re.fullmatch(r"enqueued (close-\w+): created, due_ms=(\d+)", out[0])
    assert match, out
    assert out[1] == f"enqueued {match.group(1)} again: taken, state=d, due_ms={match.group(2)}"
    with sd.Queue("orders", url=example_env["STREAMDELAY_URL"]) as queue:
        info = queue.get(match.group(1))
        assert info is not None
        assert (info.topic, info.state, info.body) == ("order.close", "delayed", {"order_id": 42})
        assert info.due == int(match.group(2)) == info.created + 1500
        assert info.headers == {"traceparent": "00-abc-def-01"}
        assert (info.ttr, info.max_attempts) == (60.0, 10)
        one = re.fullmatch(r"enqueued one (close-\w+): due_ms=(\d+)", out[2])
        assert one, out
        assert out[3] == f"enqueued one {one.group(1)} again: 0"  # taken: nothing written
        single = queue.get(one.group(1))
        assert single is not None and single.due == int(one.group(2)) == single.created + 1500
        assert (single.topic, single.body, single.headers) == (info.topic, info.body, info.headers)


def test_quick_start_producer_then_cli_worker(example_env: dict[str, str]) -> None:
    """README's five minutes: producer.py, then ``streamdelay worker tasks:worker``."""
    run_example("producer.py", example_env)
    worker = subprocess.Popen([sys.executable, "-m", "streamdelay", "worker", "tasks:worker"],
                              cwd=EXAMPLES, env=example_env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        with sd.Queue("orders", url=example_env["STREAMDELAY_URL"]) as queue:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (queue.get("close-42") or queue.get("close-44")):
                time.sleep(0.1)
            assert queue.get("close-42") is None and queue.get("close-44") is None
        time.sleep(0.3)  # the acknowledgement is flushed just after the handler returns
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=40)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate()
    assert worker.returncode == 0, err
    assert out.splitlines() == [
        "closing order 42 (job close-42, attempt 1)",
        "closing order 44 (job close-44, attempt 1)",
    ]
    assert "handled 2" in err


def _blocks() -> list[tuple[Path, str, str, str, str]]:
    found = []
    for page in PAGES:
        for kind, name, lang, code in MARKER.findall(page.read_text()):
            found.append((page, kind, name, lang, code))
    return found


def test_code_blocks_in_pages_equal_the_example_files() -> None:
    blocks = [b for b in _blocks() if b[1] == "example"]
    assert blocks, "no <!-- example: ... --> blocks found in the docs"
    for page, _, name, _, code in blocks:
        expected = (EXAMPLES / name).read_text()
        assert code == expected, f"{page.name}: the block of {name} differs from the file"
    shown = {name for _, _, name, _, _ in blocks}
    linked = {name for page in PAGES for name in re.findall(r"examples/([\w-]+\.py)",
                                                             page.read_text())}
    for example in EXAMPLES.glob("*.py"):
        assert example.name in shown | linked, f"{example.name} is in no page"


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed")
def test_keys_page_redis_cli_recipe_enqueues_a_job(
    example_env: dict[str, str], tmp_path: Path
) -> None:
    (recipe,) = [code for _, kind, name, _, code in _blocks()
                 if kind == "tested" and name == "redis-cli-enqueue"]
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe], cwd=tmp_path,
                          env=example_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (due,) = done.stdout.split()  # one value per job: the due time of the job created
    assert due.isdigit()
    with sd.Queue("orders", url=example_env["STREAMDELAY_URL"]) as queue:
        info = queue.get("close-42")
        assert info is not None
        assert (info.topic, info.body, info.due) == ("order.close", {"order_id": 42}, int(due))
        assert info.due - info.created == 30_000
        worker = sd.Worker(queue, group="billing")
        handled: list[dict[str, int]] = []

        @worker.handler("order.close")
        def close(job: sd.Job) -> None:
            handled.append(job.body)

        assert queue.reschedule("close-42", delay=0)
        worker.run(until_idle=True)
        assert handled == [{"order_id": 42}]


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs not installed")
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "keys" / "index.html").is_file()


def test_durable_producer_example_without_a_replica(example_env: dict[str, str]) -> None:
    """docs/guarantees.md#durability-across-failover: no replica, so NotDurable each time; the
    retries with the same id leave exactly one job."""
    out = run_example("durable_producer.py", example_env).splitlines()
    assert out == [
        "attempt 1: not durable (0 of 1 replicas), jobs ['capture-7']",
        "attempt 2: not durable (0 of 1 replicas), jobs ['capture-7']",
        "attempt 3: not durable (0 of 1 replicas), jobs ['capture-7']",
        "capture-7: no replica confirmed it; it is written on the primary only",
        "get capture-7: state=delayed",
        "delayed jobs: 1",
    ]
