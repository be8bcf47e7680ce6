"""The processes on a URL with ``?protocol=3`` (RESP3): ``streamdelay serve`` (enqueue, reserve,
ack over HTTP) and the CLI (``worker`` runs jobs, ``events`` lists them, ``stats``), each job
end to end under a bound, as on RESP2 (docs/scale-out.md#urls; the library's faces:
tests/integration/test_resp3.py)."""

from __future__ import annotations

import signal
import subprocess
import uuid
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer, wait_until
from tests.support.web_server import WebServer
from tests.system.test_cli import APP, ROOT, cli, cli_env, command

pytestmark = pytest.mark.timeout(120)


def resp3(server: RedisServer) -> str:
    """The server's URL asking for RESP3."""
    return server.url + "?protocol=3"


def test_serve_enqueues_reserves_and_acks_on_resp3(shared_redis: RedisServer) -> None:
    name = f"web{uuid.uuid4().hex[:8]}"
    with WebServer(resp3(shared_redis), [name]) as web:
        base = f"/v1/queues/{name}"
        for n in range(3):
            status, _ = web.request("POST", f"{base}/jobs", {"topic": "h", "id": f"h{n}",
                                                             "body": {"n": n}})
            assert status == 201
        taken: list[dict[str, object]] = []
        for _ in range(10):  # bounded: each reserve waits at most 5 s
            status, answer = web.request("POST", f"{base}/topics/h:reserve",
                                         {"wait_ms": 5000, "count": 3}, token="consumer")
            assert status in (200, 204), answer
            taken += answer["deliveries"] if status == 200 else []
            if len(taken) == 3:
                break
        assert sorted(str(d["id"]) for d in taken) == ["h0", "h1", "h2"]
        for delivery in taken:
            assert web.request("POST", f"{base}/deliveries/{delivery['receipt']}:ack", None,
                               token="consumer") == (200, {"outcome": "acked"})
        assert all(web.request("GET", f"{base}/jobs/h{n}")[0] == 404 for n in range(3))
        assert "Traceback" not in web.log_text()


def test_cli_worker_events_and_stats_on_resp3(shared_redis: RedisServer, tmp_path: Path
                                              ) -> None:
    url = resp3(shared_redis)
    name = f"cli{uuid.uuid4().hex[:8]}"
    q = sd.Queue(name, url=url, events=True)
    q.enqueue_many([sd.JobSpec("cli.echo", {"n": n}, id=f"c{n}") for n in range(6)])
    out = tmp_path / "handled.txt"
    proc = subprocess.Popen(
        command("worker", f"{APP}:worker", "--url", url, "--concurrency", "4"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=cli_env(None, CLI_APP_QUEUE=name, CLI_APP_OUT=str(out)))
    try:
        def lines() -> list[str]:
            return out.read_text().splitlines() if out.exists() else []

        assert wait_until(lambda: len(lines()) >= 6, timeout=30), lines()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert sorted(lines()) == sorted(f"done c{n} 1" for n in range(6))
    assert "Traceback" not in err and "failed" not in err, err
    events = cli("events", name, "--url", url, timeout=30)
    assert events.returncode == 0, events.stderr
    assert sum("succeeded" in line for line in events.stdout.splitlines()) == 6, events.stdout
    stats = cli("stats", name, "--url", url, timeout=30)
    assert stats.returncode == 0 and "cli.echo" in stats.stdout, stats.stderr
    q.close()
