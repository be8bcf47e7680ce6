"""The unit tier: plans, parsers and pure helpers against recorded replies; no server, no process.

A unit test that asks for a server fixture fails with the reason, and so does one that starts a
process (every server the fixtures start is a ``subprocess.Popen``): such a test belongs in
tests/integration/ (one redis-server) or tests/system/ (processes, cluster, browser).
``make check`` runs this tier alone (README.md, "Two commands")."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

# The fixtures of tests/conftest.py that start a server (directly or through another).
SERVER_FIXTURES = frozenset({"shared_redis", "redis_url", "own_redis", "durable_redis", "queue",
                             "web_server"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fail, at the first line of the run, every unit test that uses a server fixture."""
    for item in items:
        used = SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if used and "tests/unit/" in item.nodeid:
            item.add_marker(pytest.mark.usefixtures("_no_server_here"))


@pytest.fixture
def _no_server_here(request: pytest.FixtureRequest) -> None:
    """Fails the test: it is a unit test asking for a server."""
    used = sorted(SERVER_FIXTURES.intersection(request.fixturenames))
    pytest.fail(f"a unit test uses the server fixture(s) {', '.join(used)}: "
                "move it to tests/integration/ or tests/system/", pytrace=False)


@pytest.fixture(autouse=True)
def _no_process_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any ``subprocess.Popen`` (redis-server, worker, CLI) fails the unit test that starts it."""

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a unit test started a process ({args!r}): move it to "
                             "tests/integration/ or tests/system/")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield
