"""Fixtures: real redis-server processes on free ports, queues with unique names."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

import streamdelay as sd
from tests.no_skips import pytest_runtest_makereport  # noqa: F401  (a skip fails the run)
from tests.redis_server import RedisServer
from tests.web_server import web_server  # noqa: F401  (streamdelay serve, tests/web_server.py)


@pytest.fixture(scope="session")
def shared_redis() -> Iterator[RedisServer]:
    """One redis-server for the whole session; tests isolate by queue name."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(shared_redis: RedisServer) -> str:
    """URL of the shared server."""
    return shared_redis.url


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, free to kill and restart."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def durable_redis() -> Iterator[RedisServer]:
    """A private redis-server with appendonly yes / appendfsync always."""
    with RedisServer(persistent=True) as server:
        yield server


@pytest.fixture
def queue_name() -> str:
    """A queue name no other test uses."""
    return f"q{uuid.uuid4().hex[:10]}"


@pytest.fixture
def queue(redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """A fresh queue on the shared server."""
    q = sd.Queue(queue_name, url=redis_url)
    yield q
    q.close()
