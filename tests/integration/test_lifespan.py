"""``sd.lifespan(worker)`` (docs/integrations.md#lifespan) in the lifespans of FastAPI and
Litestar apps, driven by their test clients against the shared redis-server: the worker runs
jobs while the app runs, stops with it, and serves again (a fresh copy) when the app's lifespan
is entered again; a worker without handlers fails the app's start-up."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from litestar import Litestar, get
from litestar.testing import TestClient as LitestarClient

import streamdelay as sd


def _worker(queue: sd.Queue) -> sd.Worker:
    worker = sd.Worker(queue, concurrency=2, shutdown_grace=5)

    @worker.handler("greet")
    async def greet(job: sd.Job) -> str:
        return f"hello {job.body}"

    return worker


def test_fastapi_lifespan_runs_the_worker_each_time_the_app_runs(redis_url: str,
                                                                   queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url, keep_result=60)
    running = sd.lifespan(_worker(queue))
    app = FastAPI(lifespan=running)
    for name in ("ada", "alan"):  # two runs of the app: the second serves a fresh copy
        with TestClient(app):
            reply = queue.enqueue("greet", name)
            result = queue.result(reply.id, timeout=20)
            assert result is not None and result.value == f"hello {name}"
            (worker,) = running.workers
            assert not worker.stopping
        assert worker.stopping  # stopped with the app
    stats = queue.stats().topics["greet"]
    assert (stats.ready, stats.reserved) == (0, 0)
    queue.close()


def test_litestar_lifespan_runs_the_worker(redis_url: str, queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url, keep_result=60)

    @get("/")
    async def home() -> str:
        return "ok"

    app = Litestar(route_handlers=[home], lifespan=[sd.lifespan(_worker(queue))])
    with LitestarClient(app) as client:
        assert client.get("/").text == "ok"
        result = queue.result(queue.enqueue("greet", "grace").id, timeout=20)
        assert result is not None and result.value == "hello grace"
    queue.close()


def test_a_worker_that_cannot_start_fails_the_app_start(redis_url: str,
                                                        queue_name: str) -> None:
    queue = sd.Queue(queue_name, url=redis_url)
    app = FastAPI(lifespan=sd.lifespan(sd.Worker(queue)))  # no handler
    with pytest.raises(sd.ConfigError, match="handler"), TestClient(app):
        pass
    with pytest.raises(sd.ConfigError):
        sd.lifespan()
    queue.close()
