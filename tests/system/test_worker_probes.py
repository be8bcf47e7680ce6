"""``streamdelay worker --health-port``: ``/livez`` and ``/readyz`` of a real worker process,
``/readyz`` turning 503 while its Redis is down and 200 again once it is back
(docs/operations.md#probes)."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request

import pytest

import streamdelay as sd
from tests.support.redis_server import RedisServer, free_port
from tests.system.test_fleet_workers import fleet_worker
from tests.system.test_metrics_prometheus import running


def probe(port: int, path: str) -> int:
    """The HTTP status of ``GET path`` on the worker's health port."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def wait_status(port: int, path: str, status: int, timeout: float = 30.0) -> None:
    """Poll ``path`` until it answers ``status``; fail with the last answer at ``timeout``."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = probe(port, path)
        except OSError as exc:  # not listening yet
            last = exc
        if last == status:
            return
        time.sleep(0.2)
    raise AssertionError(f"{path} did not answer {status} within {timeout}s (last: {last!r})")


def test_readyz_follows_the_redis_contact_and_livez_the_event_loop(queue_name: str) -> None:
    port = free_port()
    with RedisServer() as server:
        worker = fleet_worker(server.url, queue_name, "--health-port", str(port))
        with running(worker):
            wait_status(port, "/readyz", 200)
            assert probe(port, "/livez") == 200
            assert probe(port, "/nothing") == 404
            server.kill()
            wait_status(port, "/readyz", 503)
            assert probe(port, "/livez") == 200  # the loop still answers: no restart wanted
            server.start()
            wait_status(port, "/readyz", 200, timeout=60)


def test_a_health_port_in_use_is_refused(redis_url: str, queue: sd.Queue) -> None:
    with RedisServer() as other:  # any listening port
        worker = sd.Worker(queue, health_port=other.port)
        worker.handler("t")(lambda job: None)
        with pytest.raises(sd.ConfigError, match="health_port: cannot listen"):
            worker.run()


def test_a_bad_health_port_is_refused(queue: sd.Queue) -> None:
    with pytest.raises(sd.ValidationError, match="health_port"):
        sd.Worker(queue, health_port=70000)


def test_livez_is_503_while_a_handler_blocks_the_event_loop(queue: sd.Queue) -> None:
    port = free_port()
    worker = sd.Worker(queue, health_port=port, shutdown_grace=1)
    blocked, release = threading.Event(), threading.Event()

    @worker.handler("t")
    async def hog(job: sd.Job) -> None:
        blocked.set()
        release.wait(30)  # blocks the loop itself: a handler that forgot to await

    loop = asyncio.new_event_loop()
    serving = threading.Thread(target=lambda: loop.run_until_complete(worker.serve()))
    serving.start()
    try:
        wait_status(port, "/livez", 200)
        queue.enqueue("t", None)
        assert blocked.wait(30)
        assert probe(port, "/livez") == 503  # the loop did not answer within a second
        assert probe(port, "/readyz") == 503
        release.set()
        wait_status(port, "/livez", 200)
    finally:
        release.set()
        loop.call_soon_threadsafe(worker.stop)
        serving.join(30)
        loop.close()
