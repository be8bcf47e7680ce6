"""``streamdelay.testing.capture`` (docs/testing.md#capture): producer code's enqueues recorded
with no server (the unit tier refuses any process or server), validated as for Redis, compared
by ``assert_enqueued`` with a readable diff; the library's methods are back after the block."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import msgspec
import pytest

import streamdelay as sd
from streamdelay.testing import capture


class CloseOrder(msgspec.Struct):
    """A typed body."""

    order_id: int


close = sd.task("order.close", body=CloseOrder, result=None)
URL = "redis://127.0.0.1:1/0"  # nothing listens there: a real send would fail


def test_enqueues_are_recorded_and_matched() -> None:
    q = sd.Queue("orders", url=URL)
    with capture() as captured:
        first = q.enqueue("order.close", {"order_id": 41}, delay=timedelta(minutes=30))
        typed = q.enqueue(close, CloseOrder(order_id=42), delay=30, id="close-42", priority=7)
        q.enqueue_many([sd.JobSpec("mail.send", {"to": "a@b"}), sd.JobSpec(close,
                                                                            CloseOrder(43))])
        q.chain([sd.JobSpec("step.one", 1), sd.JobSpec("step.two", 2)])
    assert [job.topic for job in captured] == ["order.close", "order.close", "mail.send",
                                               "order.close", "step.one", "step.two"]
    assert len(captured) == 6 and first.created and first.state == "delayed"
    assert isinstance(typed, sd.Enqueued) and typed.id == "close-42"
    found = captured.assert_enqueued("order.close", body={"order_id": 41}, delay=1800)
    assert found.delay == timedelta(minutes=30) and found.queue == "orders"
    # a task, a Struct body or its dict, and other options
    captured.assert_enqueued(close, body=CloseOrder(order_id=42), delay=30, id="close-42",
                             priority=7)
    captured.assert_enqueued(close, body={"order_id": 42})
    captured.assert_enqueued("mail.send")
    assert [job.body for job in captured.of(close)] == [{"order_id": 41}, CloseOrder(42),
                                                        CloseOrder(43)]
    captured.clear()
    captured.assert_nothing_enqueued()


def test_a_mismatch_names_the_jobs_and_diffs_the_nearest() -> None:
    q = sd.Queue("orders", url=URL)
    with capture() as captured:
        q.enqueue("order.close", {"order_id": 41, "reason": "unpaid"}, delay=30, id="close-41")
        q.enqueue("order.close", {"order_id": 7}, delay=5)
    with pytest.raises(AssertionError) as failed:
        captured.assert_enqueued("order.close", body={"order_id": 42, "reason": "unpaid"},
                                 delay=30)
    text = str(failed.value)
    assert text.splitlines()[0] == ("no job of topic 'order.close' enqueued with "
                                    "body={'order_id': 42, 'reason': 'unpaid'} delay=30")
    assert "jobs of 'order.close' enqueued (2):" in text
    assert "id close-41)  <- differs in: body" in text
    assert "<- differs in: body, delay" in text
    assert "body of the nearest (close-41): expected - / got +" in text
    assert "  - {'order_id': 42, 'reason': 'unpaid'}" in text
    assert "  + {'order_id': 41, 'reason': 'unpaid'}" in text
    with pytest.raises(AssertionError, match=r"topics enqueued: order.close"):
        captured.assert_enqueued("mail.send")
    with pytest.raises(AssertionError, match="expected no job enqueued"):
        captured.assert_nothing_enqueued()


def test_bad_input_raises_as_it_would_against_redis() -> None:
    q = sd.Queue("orders", url=URL)
    with capture() as captured:
        with pytest.raises(sd.ValidationError, match="topic"):
            q.enqueue("bad topic", 1)
        with pytest.raises(sd.BodyEncodeError):
            q.enqueue("t", {"x": float("nan")})
        with pytest.raises(sd.ValidationError, match="delay"):
            q.enqueue("t", 1, delay=-1)
        with pytest.raises(TypeError, match="unexpected keyword"):
            q.enqueue("t", 1, dealy=5)
    assert len(captured) == 0


def test_async_queue_and_nesting_and_restore() -> None:
    original = sd.Queue.enqueue, sd.AsyncQueue.enqueue, sd.Queue.chain
    aq = sd.AsyncQueue("orders", url=URL)

    async def produce() -> sd.EnqueueResult:
        await aq.enqueue_many([sd.JobSpec("b", 2)])
        return await aq.enqueue("a", 1, delay=60, after=["parent"])

    with capture() as outer:
        sd.Queue("orders", url=URL).enqueue("x", 0)
        with capture() as inner:
            done = asyncio.run(produce())
        assert sd.Queue.chain is not original[2]  # patched while a block is open
    assert done.state == "waiting"
    assert [j.topic for j in outer] == ["x"] and [j.topic for j in inner] == ["b", "a"]
    inner.assert_enqueued("a", body=1, delay=60, after=["parent"])
    assert inner.jobs[1].options == {"delay": 60, "after": ["parent"]}
    assert (sd.Queue.enqueue, sd.AsyncQueue.enqueue, sd.Queue.chain) == original
    assert "chain" not in sd.Queue.__dict__  # the mixin's method again, not a copy
