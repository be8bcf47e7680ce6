"""Fixtures the system tier shares (defined once here, not per module): a Redis Cluster, a
primary with a replica, and the worker processes of the reliability app with their queue.
The real servers of every tier (one shared redis-server, a private one) are tests/conftest.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from tests.support.apps.reliability_app import Workers
from tests.support.cluster import LocalCluster
from tests.system.test_durability import Pair


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """One 3-primary cluster for every system test that needs one (each uses queues of its
    own; a test that kills nodes starts a cluster of its own)."""
    with LocalCluster(primaries=3) as local:
        yield local


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    """One primary with one replica, shared by a module's tests (a test that stalls the
    replica resumes it)."""
    servers = Pair()
    yield servers
    servers.stop()


@pytest.fixture
def workers(redis_url: str, queue_name: str, tmp_path: Path) -> Iterator[Workers]:
    """Worker processes of this test's queue on the shared server (killed at the end)."""
    started = Workers(redis_url, queue_name, tmp_path)
    yield started
    started.stop_all()


@pytest.fixture
def q(workers: Workers, redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """The producer/operator face of this test's queue."""
    queue = sd.Queue(queue_name, url=redis_url)
    yield queue
    workers.stop_all()  # then leave the shared server as it was found
    for key in queue.client.scan_iter(match=f"sd:{{{queue_name}#*"):
        queue.client.delete(key)
