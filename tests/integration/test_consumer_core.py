"""The consumer core's rules hold for the Reservation as they do for the Worker
(docs/design.md#the-consumer-core): what a read returned for a topic routed otherwise since the
read began goes back to its stream, whichever change (a pause, a limit, a staging) came while
the read waited."""

from __future__ import annotations

import threading
import time

import pytest
import redis

import streamdelay as sd
from tests.integration.test_pull import promote
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(60)


def _blocked(url: str, at_least: int = 1) -> None:
    """Wait until ``at_least`` clients of the server block (a reserve's read waits)."""
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while int(client.info("clients")["blocked_clients"]) < at_least:
            assert time.monotonic() < deadline, "no reserve blocked"
            time.sleep(0.005)
    finally:
        client.close()


@pytest.mark.parametrize("known_plain", [False, True], ids=["first-round", "known-plain"])
def test_a_limit_set_while_a_reserve_waits_holds_for_what_its_read_returns(
        own_redis: RedisServer, known_plain: bool) -> None:
    """A concurrency limit set while ``reserve(wait=...)`` blocks in its plain read: the jobs
    that read returns go back (no attempt), and the limit's take hands out one. Before the
    core, the Reservation looked again only at the pause after a blocking read (and read the
    limit before its one-round-trip read): it handed out every job without a lease, and a
    second consumer's take then started another: two held under ``concurrency=1``."""
    q = sd.Queue("core", url=own_redis.url)
    waiting = sd.Queue("core", url=own_redis.url)  # the waiting consumer's own queue object
    q.enqueue("other", 1)  # the queue exists
    if known_plain:
        assert waiting.reserve("t", consumer="a") == []  # the topic is known plain now
    q.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(3)])  # due now, delayed
    got: list[sd.Reservation] = []
    thread = threading.Thread(target=lambda: got.extend(
        waiting.reserve("t", consumer="a", count=3, wait=3)))
    thread.start()
    _blocked(own_redis.url)
    q.limit("t", concurrency=1)
    promote(q, 3)  # the waiting read returns them
    thread.join(10)
    other = q.reserve("t", consumer="b", count=3)
    assert len(got) + len(other) == 1  # the concurrency, not the count
    for job_id in ("j0", "j1", "j2"):
        info = q.get(job_id)
        assert info is not None and info.attempts <= 1
    for r in got + other:
        r.ack()
    waiting.close()
    q.close()
