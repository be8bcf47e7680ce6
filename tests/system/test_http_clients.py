"""The HTTP clients of docs/examples/http/ (Node.js and PHP) run as real subprocesses against a
real ``streamdelay serve`` and a real redis-server; the outcome is checked in Redis through the
Python API: enqueue -> reserve -> ack leaves no job behind, fail -> retry -> dead leaves one dead
letter after max_attempts deliveries, and nothing stays reserved.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.support.web_server import WebServer

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "http"
NODE, PHP = shutil.which("node"), shutil.which("php")
CLIENT_TIMEOUT = 90.0  # generous: the machine is shared; the clients stop when idle


@pytest.fixture
def topic() -> str:
    """A topic no other test uses (the module's server is shared)."""
    return f"order.{uuid.uuid4().hex[:8]}"


@pytest.fixture
def queue(web_server: WebServer, shared_redis: RedisServer) -> Iterator[sd.Queue]:
    """The Python face of the first served queue, to check outcomes in Redis."""
    q = sd.Queue(web_server.queues[0], url=shared_redis.url)
    yield q
    q.close()


def client_env(server: WebServer, topic: str, token: str = "admin",
               **extra: str) -> dict[str, str]:
    """The settings of the example clients (docs/examples/http/README.md) for this test."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("STREAMDELAY_")}
    env.update(STREAMDELAY_HTTP_URL=server.url, STREAMDELAY_TOKEN=server.token(token),
               STREAMDELAY_QUEUE=server.queues[0], STREAMDELAY_TOPIC=topic,
               STREAMDELAY_WAIT_MS="500", STREAMDELAY_IDLE_EXIT="3",
               STREAMDELAY_RETRY_DELAY="0", STREAMDELAY_GROUP="http-clients")
    env.update(extra)
    return env


def run_client(args: list[str], env: dict[str, str], expect_code: int = 0,
               ) -> list[dict[str, Any]]:
    """Run one client to its end; its JSON lines."""
    assert args[0] is not None, "node and php are installed by `make test` (Makefile TOOLS)"
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT,
                          cwd=EXAMPLES)
    assert done.returncode == expect_code, (
        f"{' '.join(args)} exited {done.returncode}\nstdout:\n{done.stdout}\n"
        f"stderr:\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def events(lines: list[dict[str, Any]], kind: str) -> list[tuple[str, int]]:
    """(id, attempt) of each line of one event kind, in order."""
    return [(line["id"], line["attempt"]) for line in lines if line.get("event") == kind]


def assert_settled(queue: sd.Queue, topic: str, acked: list[str], poison: str) -> None:
    """The outcome in Redis: acked jobs gone, the poison job dead after its 3 attempts with the
    consumer's error, nothing delayed, ready or reserved on the topic."""
    for job_id in acked:
        assert queue.get(job_id) is None, job_id
    dead = queue.dead_list(topic)
    assert [(d.id, d.attempts) for d in dead] == [(poison, 3)]
    assert "cannot be closed" in dead[0].error
    stats = queue.stats().topics[topic]
    assert (stats.delayed, stats.ready, stats.reserved, stats.dead) == (0, 0, 0, 1)


def test_node_producer_and_consumer(web_server: WebServer, queue: sd.Queue,
                                    topic: str) -> None:
    """producer.mjs enqueues one job per request, two by the batch route and a poison job;
    consumer.mjs acks the good ones (touching the slow one first) and fails the poison job
    until it is dead."""
    env = client_env(web_server, topic)
    produced = run_client([NODE, "producer.mjs", f"{topic}-"], env)  # type: ignore[list-item]
    assert [(line["route"], line["status"]) for line in produced] == [
        ("jobs", 201), ("jobs:batch", 200), ("jobs", 201)]
    ids = [f"{topic}-ok-1", f"{topic}-ok-2", f"{topic}-ok-3", f"{topic}-poison"]
    for job_id in ids:
        info = queue.get(job_id)
        assert info is not None and info.topic == topic, job_id
    assert queue.get(f"{topic}-poison").max_attempts == 3  # type: ignore[union-attr]
    again = run_client([NODE, "producer.mjs", f"{topic}-"], env)  # type: ignore[list-item]
    assert [line["status"] for line in again] == [200, 200, 200]  # ids are idempotent
    assert again[0]["created"] is False and again[2]["created"] is False

    consumed = run_client([NODE, "consumer.mjs"], env)  # type: ignore[list-item]
    assert sorted(events(consumed, "acked")) == [(i, 1) for i in ids[:3]]
    # ok-3: 2 s of work with a ttr of 2 s, touched every third of its ttr
    assert events(consumed, "touched") == [(ids[2], 1)] * 2
    assert events(consumed, "failed") == [(ids[3], 1), (ids[3], 2), (ids[3], 3)]
    assert not events(consumed, "stale")
    assert consumed[-1]["event"] == "stopped"
    assert_settled(queue, topic, ids[:3], ids[3])


def test_php_consumer(web_server: WebServer, queue: sd.Queue, topic: str) -> None:
    """consumer.php enqueues the demo jobs (one request, one batch), then consumes them: acks,
    and fail -> retry -> dead for the poison job."""
    env = client_env(web_server, topic)
    produced = run_client([PHP, "consumer.php", "enqueue", f"{topic}-"],  # type: ignore[list-item]
                          env)
    assert [(line["route"], line["status"]) for line in produced] == [
        ("jobs", 201), ("jobs:batch", 200)]
    ids = [f"{topic}-ok-1", f"{topic}-ok-2", f"{topic}-poison"]
    assert all(queue.get(job_id) is not None for job_id in ids)

    consumed = run_client([PHP, "consumer.php"], env)  # type: ignore[list-item]
    assert sorted(events(consumed, "acked")) == [(i, 1) for i in ids[:2]]
    assert events(consumed, "failed") == [(ids[2], 1), (ids[2], 2), (ids[2], 3)]
    assert consumed[-1]["event"] == "stopped"
    assert_settled(queue, topic, ids[:2], ids[2])


def test_php_consumer_takes_jobs_a_python_producer_enqueued(
        web_server: WebServer, queue: sd.Queue, topic: str) -> None:
    """Jobs enqueued with the library come out of the PHP consumer with their JSON body, and
    the Node consumer with the write-only token is refused (403) and exits 1."""
    queue.enqueue_many([sd.JobSpec(topic, {"order_id": n}, id=f"{topic}-py-{n}")
                        for n in range(5)])
    refused = run_client([NODE, "consumer.mjs"],  # type: ignore[list-item]
                         client_env(web_server, topic, token="writer"), expect_code=1)
    assert refused[-1]["event"] == "error" and refused[-1]["status"] == 403
    consumed = run_client([PHP, "consumer.php"],  # type: ignore[list-item]
                          client_env(web_server, topic, token="consumer"))
    assert sorted(events(consumed, "acked")) == sorted((f"{topic}-py-{n}", 1) for n in range(5))
    stats = queue.stats().topics[topic]
    assert (stats.delayed, stats.ready, stats.reserved, stats.dead) == (0, 0, 0, 0)


def test_node_consumer_heartbeat_keeps_a_long_job_and_a_stale_receipt_answers_409(
        web_server: WebServer, queue: sd.Queue, topic: str) -> None:
    """Two jobs of 4 s of work, one consumer per job at once: the one that touches every third
    of the ttr (2 s) acks its job at attempt 1; the one without heartbeats loses its job (ttr
    1 s) to the server's reclaim (its only attempt: dead) and its ack answers 409."""
    other = f"{topic}.nobeat"
    for name, ttr in ((topic, 2), (other, 1)):
        queue.enqueue(name, {"order_id": 1, "work_ms": 4000}, id=f"{name}-long", ttr=ttr,
                      max_attempts=1)
    beating = subprocess.Popen([NODE, "consumer.mjs"], cwd=EXAMPLES,  # type: ignore[list-item]
                               env=client_env(web_server, topic), stdout=subprocess.PIPE,
                               text=True)
    silent = run_client([NODE, "consumer.mjs"],  # type: ignore[list-item]
                        client_env(web_server, other, STREAMDELAY_HEARTBEAT="0"))
    out, _ = beating.communicate(timeout=CLIENT_TIMEOUT)
    assert beating.returncode == 0, out
    kept = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert events(kept, "acked") == [(f"{topic}-long", 1)]
    assert len(events(kept, "touched")) >= 3 and not events(kept, "stale")
    assert queue.get(f"{topic}-long") is None

    assert [line for line in silent if line.get("event") == "stale"] == [
        {"event": "stale", "id": f"{other}-long", "action": "ack"}]
    assert not events(silent, "acked") and not events(silent, "touched")
    assert [(d.id, d.attempts) for d in queue.dead_list(other)] == [(f"{other}-long", 1)]


def test_node_and_php_consumers_share_a_group(web_server: WebServer, queue: sd.Queue,
                                              topic: str) -> None:
    """A Node and a PHP consumer of one group at once (competing consumers): each of 30 jobs
    is acknowledged exactly once, by one of them."""
    ids = [f"{topic}-{n}" for n in range(30)]
    queue.enqueue_many([sd.JobSpec(topic, {"order_id": n}, id=job_id)
                        for n, job_id in enumerate(ids)])
    env = client_env(web_server, topic, token="consumer")
    node = subprocess.Popen([NODE, "consumer.mjs"], cwd=EXAMPLES,  # type: ignore[list-item]
                            env=env, stdout=subprocess.PIPE, text=True)
    php = run_client([PHP, "consumer.php"], env)  # type: ignore[list-item]
    out, _ = node.communicate(timeout=CLIENT_TIMEOUT)
    assert node.returncode == 0, out
    acked = events(php, "acked") + events(
        [json.loads(line) for line in out.splitlines() if line.strip()], "acked")
    assert sorted(acked) == sorted((job_id, 1) for job_id in ids)
    stats = queue.stats().topics[topic]
    assert (stats.delayed, stats.ready, stats.reserved, stats.dead) == (0, 0, 0, 0)


def test_readme_lists_every_setting_the_clients_read() -> None:
    """The settings table of docs/examples/http/README.md names exactly the environment
    variables the three programs read."""
    read: set[str] = set()
    for name in ("producer.mjs", "consumer.mjs", "consumer.php"):
        text = (EXAMPLES / name).read_text()
        read |= set(re.findall(r"process\.env\.(STREAMDELAY_[A-Z_]+)", text))
        read |= set(re.findall(r"getenv\('(STREAMDELAY_[A-Z_]+)'\)", text))
    table = (EXAMPLES / "README.md").read_text().split("## Settings", 1)[1].split("\n## ")[0]
    assert set(re.findall(r"^\| `(STREAMDELAY_[A-Z_]+)`", table, re.MULTILINE)) == read
    assert len(read) >= 9


@pytest.mark.parametrize("program", ["consumer.mjs", "consumer.php"])
def test_consumer_stops_on_sigterm(web_server: WebServer, topic: str, program: str) -> None:
    """SIGTERM during a long poll: the consumer finishes the poll and exits 0 with "stopped"."""
    args = [NODE if program.endswith(".mjs") else PHP, program]
    assert args[0] is not None
    env = client_env(web_server, topic, STREAMDELAY_IDLE_EXIT="0", STREAMDELAY_WAIT_MS="1000")
    child = subprocess.Popen(args, cwd=EXAMPLES, env=env, stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)  # inside a reserve's long poll, or between two
        assert child.poll() is None, "the consumer stopped on its own"
        child.send_signal(signal.SIGTERM)
        out, _ = child.communicate(timeout=15)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, out
    assert json.loads(out.splitlines()[-1])["event"] == "stopped"
