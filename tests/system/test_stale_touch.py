"""A stale ``:touch`` after another consumer took the job over (docs/http.md#consumers,
docs/guarantees.md#never-twice-at-once): it answers 409 ``stale_receipt``, writes no progress
and does not take the delivery back; the consumer that holds it now touches and acks it.

Two ways to lose a delivery: its ttr ran out (the reclaim re-queues it: a new stream entry,
read by the other consumer), and a hand-over (``claim(to=...)``: the same entry, another
owner), where only the touch script's owner check (lua/touchJobs-6.lua) refuses the stale
touch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

import streamdelay as sd
from streamdelay.consume.core.receipts import KEY_FIELD, decode_receipt, encode_receipt, signed
from streamdelay.protocol.keys import PartitionKeys
from tests.support.web_server import WebServer, web_server

__all__ = ["web_server"]  # the fixture, imported for this module
pytestmark = pytest.mark.timeout(60)


def _q(server: WebServer) -> str:
    return f"/v1/queues/{server.queues[0]}"


def _reserve(server: WebServer, topic: str, **body: Any) -> tuple[int, Any]:
    return server.request("POST", f"{_q(server)}/topics/{topic}:reserve", body,
                          token="consumer")


def _settle(server: WebServer, receipt: str, action: str, body: Any = None) -> tuple[int, Any]:
    return server.request("POST", f"{_q(server)}/deliveries/{receipt}:{action}", body,
                          token="consumer")


def _job(server: WebServer, job_id: str) -> dict[str, Any]:
    status, job = server.request("GET", f"{_q(server)}/jobs/{job_id}", token="reader")
    assert status == 200, job
    return job  # type: ignore[no-any-return]


@pytest.fixture
def queue(web_server: WebServer) -> Iterator[sd.Queue]:
    """The served queue, as a producer and operator sees it."""
    with sd.Queue(web_server.queues[0], url=web_server.redis_url) as q:
        yield q


def _stale_touch_is_refused(server: WebServer, job_id: str, stale: str, fresh: str) -> None:
    """The checks both takeovers share: sleepy's touch with progress 99 is a 409 and changes
    nothing; awake's touch and ack answer 200."""
    status, error = _settle(server, stale, "touch", {"progress": 99})
    assert status == 409 and error["error"]["code"] == "stale_receipt", (status, error)
    job = _job(server, job_id)
    assert (job["state"], job["consumer"]) == ("reserved", "awake"), job
    assert job.get("progress") != 99, job
    assert _settle(server, fresh, "touch", {"progress": 1}) == (200, {"outcome": "touched"})
    job = _job(server, job_id)
    assert (job["consumer"], job.get("progress")) == ("awake", 1), job
    assert _settle(server, fresh, "ack")[0] == 200
    assert server.request("GET", f"{_q(server)}/jobs/{job_id}", token="reader")[0] == 404


def test_a_touch_after_the_ttr_ran_out_and_another_consumer_took_the_job(
        web_server: WebServer) -> None:
    web_server.request("POST", f"{_q(web_server)}/jobs",
                       {"topic": "st.ttr", "id": "st-ttr", "ttr": 1})
    status, answer = _reserve(web_server, "st.ttr", wait_ms=5000, consumer="sleepy")
    assert status == 200 and answer["deliveries"], answer
    stale = answer["deliveries"][0]["receipt"]
    status, answer = _reserve(web_server, "st.ttr", wait_ms=15000, consumer="awake")
    assert status == 200 and answer["deliveries"], answer
    fresh = answer["deliveries"][0]
    assert (fresh["id"], fresh["attempt"]) == ("st-ttr", 2)
    _stale_touch_is_refused(web_server, "st-ttr", stale, fresh["receipt"])


def test_a_touch_after_the_delivery_was_handed_to_another_consumer(
        web_server: WebServer, queue: sd.Queue) -> None:
    web_server.request("POST", f"{_q(web_server)}/jobs",
                       {"topic": "st.hand", "id": "st-hand", "ttr": 30})
    status, answer = _reserve(web_server, "st.hand", wait_ms=5000, consumer="sleepy")
    assert status == 200 and answer["deliveries"], answer
    stale = answer["deliveries"][0]["receipt"]
    # the operator hands sleepy's delivery to awake: the same entry, another owner; awake's
    # receipt is sleepy's with its own name, signed with the queue's key (as a reserve of
    # awake's would be)
    claimed = queue.claim("workers", topic="st.hand", min_idle=0, to="awake")
    assert claimed.moved == ["st-hand"], claimed
    ours = decode_receipt(stale, queue.config.name, queue.config.partitions)
    key = queue.client.hget(PartitionKeys(queue.config.name, 0).meta, KEY_FIELD)
    assert isinstance(key, bytes)
    fresh = encode_receipt(signed(msgspec.structs.replace(ours, consumer="awake"), key))
    _stale_touch_is_refused(web_server, "st-hand", stale, fresh)
