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


def _refuse(name: str) -> None:
    pytest.fail(f"a unit test uses the server fixture {name}: move it to tests/integration/ or "
                "tests/system/", pytrace=False)


# The fixtures of tests/conftest.py that start a server, overridden for this directory (redis_url
# and queue go through shared_redis): the test fails before anything starts.
@pytest.fixture
def shared_redis() -> None:
    """Refused in the unit tier."""
    _refuse("shared_redis")


@pytest.fixture
def own_redis() -> None:
    """Refused in the unit tier."""
    _refuse("own_redis")


@pytest.fixture
def durable_redis() -> None:
    """Refused in the unit tier."""
    _refuse("durable_redis")


@pytest.fixture
def web_server() -> None:
    """Refused in the unit tier."""
    _refuse("web_server")


@pytest.fixture(autouse=True)
def _no_process_here(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any ``subprocess.Popen`` (redis-server, worker, CLI) fails the unit test that starts it."""

    def refuse(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a unit test started a process ({args!r}): move it to "
                             "tests/integration/ or tests/system/")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    yield
