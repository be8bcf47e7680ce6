"""``streamdelay serve --replicas N --replica-timeout S`` (docs/http.md#errors,
docs/guarantees.md#durability-across-failover): with a real primary and a real replica, an
enqueue answers 201 once the replica has it, 503 ``not_durable`` while the replica is stopped
(SIGSTOP), and the retry after SIGCONT answers 200 (the id existed) with the job there once."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

import streamdelay as sd
from tests.support.web_server import WebServer
from tests.system.test_durability import ROOT, Pair

pytestmark = pytest.mark.timeout(90)
WAIT_S = 0.3




def test_serve_answers_not_durable_while_the_replica_misses(pair: Pair) -> None:
    name = f"wd{uuid.uuid4().hex[:8]}"
    jobs = f"/v1/queues/{name}/jobs"
    with WebServer(pair.primary.url, [name], "--replicas", "1", "--replica-timeout",
                   str(WAIT_S)) as server:
        status, first = server.request("POST", jobs, {"topic": "t", "id": "up", "delay": 60})
        assert (status, first["created"]) == (201, True)
        pair.stall()
        try:
            began = time.monotonic()
            status, error = server.request("POST", jobs, {"topic": "t", "id": "late",
                                                          "delay": 60})
            assert time.monotonic() - began < WAIT_S + 5  # within its timeout (slack)
            status_batch, error_batch = server.request("POST", f"{jobs}:batch", {"jobs": [
                {"topic": "t", "id": "b1", "delay": 60}]})
        finally:
            pair.resume()
        assert status == 503 and error["error"]["code"] == "not_durable", error
        message = error["error"]["message"]
        assert "0 of 1 replicas" in message and "late" in message, message
        assert status_batch == 503 and error_batch["error"]["code"] == "not_durable"
        status, again = server.request("POST", jobs, {"topic": "t", "id": "late", "delay": 60})
        assert (status, again["created"]) == (200, False)  # it was written: the retry is safe
    with sd.Queue(name, url=pair.primary.url) as queue:
        assert sorted(j.id for j in queue.jobs(topic="t", state="delayed").jobs) == [
            "b1", "late", "up"]  # each once


def test_serve_pause_and_resume_answer_not_durable_while_the_replica_misses(pair: Pair) -> None:
    name = f"wp{uuid.uuid4().hex[:8]}"
    topic = f"/v1/queues/{name}/topics/t"
    with WebServer(pair.primary.url, [name], "--replicas", "1", "--replica-timeout",
                   str(WAIT_S)) as server:
        server.request("POST", f"/v1/queues/{name}/jobs", {"topic": "t", "delay": 60})
        status, answer = server.request("POST", f"{topic}:pause")
        assert (status, answer["changed"]) == (200, True), answer
        pair.stall()
        try:
            status, error = server.request("POST", f"{topic}:resume")
        finally:
            pair.resume()
        assert status == 503 and error["error"]["code"] == "not_durable", error
        assert "setPaused" in error["error"]["message"]
        status, again = server.request("POST", f"{topic}:resume")  # written: the retry is safe
        assert (status, again["changed"]) == (200, False)


def test_bad_replicas_options_are_one_line_and_exit_2() -> None:
    for args, field in ((["--replicas", "-1"], "replicas"),
                        (["--replicas", "1", "--replica-timeout", "0"], "replica_timeout")):
        done = subprocess.run(
            [sys.executable, "-m", "streamdelay", "serve", "--queue", "q", "--url",
             "redis://127.0.0.1:1/0", "--port", "0", *args],
            capture_output=True, text=True, timeout=30, cwd=ROOT)
        assert done.returncode == 2, done.stderr
        assert f"error: {field}:" in done.stderr and "Traceback" not in done.stderr, done.stderr
