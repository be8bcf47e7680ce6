"""Receipts are signed and bounded (docs/pull.md#receipts, docs/security.md#receipts).

A consumer that edits its receipt (a retry delay of 31,700 years, one past 2**63, another
job's entry, another consumer) is refused with ``ValidationError`` (field ``receipt``; HTTP 422)
and nothing changes; a receipt of an earlier release (unsigned) is refused with a message that
says so; even a genuinely signed receipt must hold every field in bounds; and ``failJob``
clamps its retry delay to 10 years whoever calls it.
"""

from __future__ import annotations

import base64
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import redis

import streamdelay as sd
from streamdelay.consume.core.receipts import KEY_FIELD, MAX_RETRY_MS, Receipt, signed
from streamdelay.consume.core.reserving import reserve_args, round_plan
from streamdelay.io.runner import drive_sync
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.deliveries import fail_call
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.plan import Commands
from streamdelay.protocol.replies import parse_fail
from tests.integration.test_pull import promote
from tests.integration.test_pull_roundtrips import CFG as ROUNDTRIP_CFG
from tests.integration.test_pull_roundtrips import _settled_state as settled_state
from tests.support.web_server import WebServer

pytestmark = pytest.mark.timeout(60)
TEN_YEARS_MS = 10 * 365 * 86400 * 1000

# the fields of a receipt, in order (streamdelay/consume/core/receipts.py)
VERSION, QUEUE, PARTITION, TOPIC, ID, ENTRY, GROUP, CONSUMER, ATTEMPT, DUE, TTR, RETRY, TAG = (
    range(13))


def fields_of(receipt: str) -> list[Any]:
    """The MessagePack array inside a receipt."""
    decoded: list[Any] = msgspec.msgpack.decode(
        base64.urlsafe_b64decode(receipt + "=" * (-len(receipt) % 4)))
    return decoded


def pack(fields: list[Any]) -> str:
    """A receipt text of ``fields``."""
    return base64.urlsafe_b64encode(msgspec.msgpack.encode(fields)).rstrip(b"=").decode()


def edit(receipt: str, index: int, value: Any) -> str:
    """``receipt`` with one field changed (its tag kept): what an editing consumer sends."""
    fields = fields_of(receipt)
    fields[index] = value
    return pack(fields)


def reserved(queue: sd.Queue, job_id: str) -> sd.Reservation:
    """A fresh reservation of job ``job_id`` (topic ``t``)."""
    queue.enqueue("t", {"job": job_id}, id=job_id)
    promote(queue)
    [r] = queue.reserve("t", consumer="c1")
    return r


def untouched(queue: sd.Queue, job_id: str) -> None:
    """The job is still reserved by c1, no attempt spent."""
    info = queue.get(job_id)
    assert info is not None and (info.state, info.consumer, info.attempts) == (
        "reserved", "c1", 0), info


EDITS = [(RETRY, 10**15), (RETRY, 0), (RETRY, 2**63), (RETRY, 2**64 - 1), (DUE, 1),
         (ATTEMPT, 9), (TTR, 1000), (CONSUMER, "thief"), (GROUP, "others"),
         (ENTRY, "1-1"), (ID, "another"), (TOPIC, "u"), (TAG, b"\0" * 16), (TAG, b""),
         (VERSION, 3)]


@pytest.mark.parametrize(("index", "value"), EDITS)
def test_an_edited_receipt_is_refused_and_changes_nothing(queue: sd.Queue, index: int,
                                                          value: Any) -> None:
    r = reserved(queue, "j1")
    forged = edit(r.receipt, index, value)
    for settle in ("fail", "ack", "touch", "release"):
        with pytest.raises(sd.ValidationError) as err:
            reservation = queue.reservation(forged)
            if settle == "fail":
                reservation.fail("boom")
            else:
                getattr(reservation, settle)()
        assert err.value.field == "receipt", err.value
        untouched(queue, "j1")
    assert r.fail("real", retry_delay=3600) == "retried"  # the genuine one still settles
    info = queue.get("j1")
    assert info is not None and info.state == "delayed" and info.attempts == 1
    queue.cancel("j1")


def test_an_unsigned_receipt_of_an_earlier_release_is_refused_clearly(queue: sd.Queue) -> None:
    r = reserved(queue, "old")
    fields = fields_of(r.receipt)[:TAG]
    fields[VERSION] = 1  # the layout of release 1 receipts: these 12 fields, no tag
    with pytest.raises(sd.ValidationError) as err:
        queue.reservation(pack(fields)).ack()
    assert err.value.field == "receipt"
    assert "unsigned receipt of an earlier release (version 1)" in str(err.value)
    untouched(queue, "old")
    r.ack()


def test_a_signed_receipt_must_hold_every_field_in_bounds(queue: sd.Queue,
                                                           redis_url: str) -> None:
    r = reserved(queue, "b1")
    client = redis.Redis.from_url(redis_url)
    key = client.hget(PartitionKeys(queue.name, 0).meta, KEY_FIELD)
    client.close()
    assert isinstance(key, bytes) and len(key) >= 32
    genuine = Receipt(*fields_of(r.receipt))
    for change in ({"retry_ms": MAX_RETRY_MS + 1}, {"retry_ms": -1}, {"due": 10**17},
                   {"ttr_ms": 8 * 86400 * 1000}, {"attempt": 0}, {"attempt": 2**40},
                   {"partition": 1}):
        forged = signed(msgspec.structs.replace(genuine, **change), key)
        with pytest.raises(sd.ValidationError) as err:
            queue.reservation(pack(list(msgspec.structs.astuple(forged)))).fail("x")
        assert err.value.field == "receipt", change
    untouched(queue, "b1")
    at_the_bound = signed(msgspec.structs.replace(genuine, retry_ms=MAX_RETRY_MS), key)
    assert queue.reservation(pack(list(msgspec.structs.astuple(at_the_bound)))).fail(
        "x") == "retried"  # signed by the queue and in bounds: 10 years, the Backoff cap
    info = queue.get("b1")
    assert info is not None and info.due <= time.time() * 1000 + TEN_YEARS_MS + 60_000
    queue.cancel("b1")


@pytest.mark.parametrize("delay", [10**15, 2**63, 2**64 + 7, -5])
def test_the_fail_script_clamps_its_retry_delay(queue: sd.Queue, delay: int) -> None:
    r = reserved(queue, "c1")
    keys = PartitionKeys(queue.name, 0)

    def plan() -> Any:
        return (yield fail_call(keys, "workers", "t", "c1", fields_of(r.receipt)[ENTRY], delay,
                                False, "boom"))

    before = int(time.time() * 1000)
    outcome = parse_fail(drive_sync(queue.client, plan(), 5.0))
    assert outcome.retried
    info = queue.get("c1")  # the record parses: no "malformed record"
    assert info is not None and info.state == "delayed"
    expected = before + (TEN_YEARS_MS if delay > 0 else 0)
    assert expected - 5_000 <= info.due <= expected + 5_000, (info.due, expected)
    assert [j.id for j in queue.jobs("delayed").jobs] == ["c1"]
    queue.cancel("c1")


def test_the_key_is_made_once_and_every_queue_object_accepts_its_receipts(
        redis_url: str, queue_name: str) -> None:
    queues = [sd.Queue(queue_name, url=redis_url) for _ in range(4)]
    queues[0].enqueue_many([sd.JobSpec("t", i, id=f"k{i}") for i in range(4)])
    promote(queues[0], 4)
    taken: list[sd.Reservation] = []
    threads = [threading.Thread(target=lambda q=q: taken.extend(q.reserve("t", wait=2)))
               for q in queues]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 4
    other = sd.Queue(queue_name, url=redis_url)  # a process that reserved nothing
    for r in taken:
        other.reservation(r.receipt).ack()
    client = redis.Redis.from_url(redis_url)
    meta = PartitionKeys(queue_name, 0).meta
    first = client.hget(meta, KEY_FIELD)
    # Redis lost the key (a flush, a failover to an empty replica): a new one is made, and a
    # queue object that knew the old one reads it again on the first receipt it cannot check
    client.hdel(meta, KEY_FIELD)
    fresh = sd.Queue(queue_name, url=redis_url)  # a process started since
    fresh.enqueue("t", 9, id="after")
    promote(fresh)
    [r] = fresh.reserve("t", wait=2)
    assert client.hget(meta, KEY_FIELD) not in (None, first)
    other.reservation(r.receipt).ack()
    assert other.get("after") is None
    client.close()
    for q in [*queues, other, fresh]:
        q.close()


@pytest.fixture(scope="module")
def served(web_server: WebServer) -> Iterator[tuple[WebServer, sd.Queue]]:
    """The served queue of the module's ``streamdelay serve``."""
    queue = sd.Queue(web_server.queues[1], url=web_server.redis_url)
    yield web_server, queue
    queue.close()


def test_http_refuses_an_edited_receipt_with_422(served: tuple[WebServer, sd.Queue]) -> None:
    server, queue = served
    job = f"h{uuid.uuid4().hex[:6]}"
    queue.enqueue("t", {"n": 1}, id=job)  # the service's dispatcher promotes it
    base = f"/v1/queues/{queue.name}"
    status, answer = server.request("POST", f"{base}/topics/t:reserve",
                                    {"consumer": "c1", "wait_ms": 2000}, token="consumer")
    assert status == 200, answer
    receipt = answer["deliveries"][0]["receipt"]
    for index, value in ((RETRY, 10**15), (RETRY, 2**63), (ENTRY, "1-1"), (CONSUMER, "x")):
        forged = edit(receipt, index, value)
        for action, body in ((":fail", {"error": "boom"}), (":ack", None), (":touch", None)):
            status, answer = server.request("POST", f"{base}/deliveries/{forged}{action}", body,
                                            token="consumer")
            assert status == 422 and answer["error"]["field"] == "receipt", answer
            untouched(queue, job)
    status, answer = server.request("POST", f"{base}/deliveries/{receipt}:ack",
                                    token="consumer")
    assert status == 200 and answer == {"outcome": "acked"}
    assert queue.get(job) is None


def test_a_key_that_cannot_be_read_hands_what_was_taken_back() -> None:
    """The signing key is read after the read took entries (a round that finds none never pays
    for it); when that read fails, every entry taken is handed back (``releaseJobs``, not an
    attempt) before the error is raised, so nothing is left reserved for nobody."""
    state = settled_state()  # registered; reclaim, prune (and any other upkeep) not due
    plan = round_plan(ROUNDTRIP_CFG, state, reserve_args("t", "g", "c", 1, 1), 1000, 0.0,
                      False)
    assert isinstance(next(plan), Commands)  # the pause and limit checks
    stream = PartitionKeys("orders", 0).stream("t")
    fields = {b"id": b"j1", b"rec": b"s|0|1|1|60000|3|1-0|t|" + encode_blob("j", b"{}", {}, None)}
    step = plan.send([0, None, 0])  # not paused, not limited, not staged: the read
    assert isinstance(step, Commands) and [c.args[0] for c in step.commands] == [
        "XREADGROUP", "TIME"]  # the read, with the clock its deadlines are checked on
    step = plan.send([[[stream.encode(), [(b"1-0", fields)]]], [b"1800000000", b"0"]])
    # paused, limited or staged since the blocking read began? (the look again, docs/pull.md)
    assert isinstance(step, Commands) and [c.args[0] for c in step.commands] == [
        "HEXISTS", "HGET", "HEXISTS"]
    step = plan.send([0, None, 0])
    assert isinstance(step, Commands) and step.commands[0].args[0] == "HSETNX"
    handed_back = plan.throw(sd.ConnectionFailed("redis went away"))
    assert handed_back.script.name == "releaseJobs" and "1-0" in handed_back.args
    with pytest.raises(sd.ConnectionFailed):
        plan.send(1)
