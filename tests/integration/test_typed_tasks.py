"""Typed tasks (docs/typed-tasks.md): ``sd.task`` binds a topic to its body and result types;
enqueue, ``JobSpec``, ``Worker.handles`` and the reply's ``result()`` use them on a real server,
and the wire is the one of a string topic (another language sees nothing new)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import msgspec
import pytest

import streamdelay as sd
from streamdelay.protocol.codec import decode_blob, parse_record
from streamdelay.protocol.keys import PartitionKeys
from tests.system import test_docs_examples as docs_examples

pytestmark = pytest.mark.timeout(120)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example


class CloseOrder(msgspec.Struct):
    """A job body."""

    order_id: int


class Refund(msgspec.Struct):
    """Another body type."""

    order_id: int
    cents: int


class Receipt(msgspec.Struct):
    """A result with a type JSON has not: it must come back decoded, not as a string."""

    order_id: int
    closed_at: datetime


close = sd.task("order.close", body=CloseOrder, result=Receipt)
STAMP = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


@contextmanager
def serving(worker: sd.Worker) -> Iterator[None]:
    """The worker serving in a thread of its own until the block ends."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(worker.serve(),),
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(worker.stop)
        thread.join(30)
        loop.close()


def test_task_is_generic_and_checked_once() -> None:
    assert close.name == "order.close" and close.body is CloseOrder and close.result is Receipt
    assert sd.Task[CloseOrder, Receipt] is not None and sd.Job[CloseOrder] is not None
    assert sd.JobResult[Receipt] is not None and sd.Enqueued[Receipt] is not None
    assert repr(close) == "Task('order.close', body=CloseOrder, result=Receipt)"
    assert sd.task("a.b", body=dict).result is type(None)
    with pytest.raises(sd.ValidationError, match="topic"):
        sd.task("not a topic", body=CloseOrder)
    with pytest.raises(sd.ConfigError, match="body"):
        sd.task("a.b", body=threading.Lock)  # type: ignore[arg-type]  # not decodable
    worker = sd.Worker(sd.Queue("q"))
    with pytest.raises(sd.ConfigError, match=r"sd\.task\(\)"):
        worker.handles("order.close")  # type: ignore[arg-type]


def test_enqueue_handle_and_typed_result(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        worker = sd.Worker(q, group="g", block=0.2)
        seen: list[object] = []

        @worker.handles(close)
        def close_order(job: sd.Job[CloseOrder]) -> Receipt:
            seen.append(job.body)
            return Receipt(order_id=job.body.order_id, closed_at=STAMP)

        reply = q.enqueue(close, CloseOrder(order_id=42), id="close-42")
        assert isinstance(reply, sd.Enqueued) and isinstance(reply, sd.EnqueueResult)
        assert (reply.id, reply.created, reply.state) == ("close-42", True, "delayed")
        with serving(worker):
            done = reply.result(timeout=30)
        assert seen == [CloseOrder(order_id=42)]  # decoded into the task's body type
        assert done.state == "succeeded" and done.error is None
        assert done.value == Receipt(order_id=42, closed_at=STAMP)
        assert isinstance(done.value.closed_at, datetime)
        # the untyped read of the same result: plain JSON values, as other languages see it
        plain = q.result("close-42")
        assert plain is not None and plain.value == {"order_id": 42,
                                                     "closed_at": "2026-01-02T03:04:05Z"}


def test_the_wire_is_the_string_topics(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        typed = q.enqueue(close, CloseOrder(order_id=7), id="typed", delay=60)
        plain = q.enqueue("order.close", {"order_id": 7}, id="plain", delay=60)
        assert type(plain) is sd.EnqueueResult and type(typed) is sd.Enqueued
        jobs = PartitionKeys(queue_name, 0).jobs
        records = [parse_record(q.client.hget(jobs, i)) for i in ("typed", "plain")]
        assert records[0].topic == records[1].topic == "order.close"
        assert decode_blob(records[0].blob) == decode_blob(records[1].blob)  # same bytes
        info = q.get("typed")
        assert info is not None and info.topic == "order.close" and info.body == {"order_id": 7}


def test_job_spec_enqueue_many_and_chain(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        spec = sd.JobSpec(close, CloseOrder(order_id=1), id="many-1", delay=60)
        assert spec.topic == "order.close"  # a JobSpec keeps the topic string
        assert [r.id for r in q.enqueue_many([spec])] == ["many-1"]
        chained = q.chain([sd.JobSpec(close, CloseOrder(order_id=2), id="c-1"),
                           sd.JobSpec(close, CloseOrder(order_id=3), id="c-2")])
        assert [r.id for r in chained] == ["c-1", "c-2"]
        ran: list[int] = []
        worker = sd.Worker(q, group="g", block=0.2)

        @worker.handles(close)
        async def close_order(job: sd.Job[CloseOrder]) -> Receipt:
            ran.append(job.body.order_id)
            return Receipt(order_id=job.body.order_id, closed_at=STAMP)

        q.cancel("many-1")
        asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
        assert ran == [2, 3]  # the chain's order
        done = q.result("c-2")
        assert done is not None and done.value == {"order_id": 3,
                                                   "closed_at": "2026-01-02T03:04:05Z"}
        info = q.batch([sd.JobSpec(close, CloseOrder(order_id=4), id="b-1", delay=60)],
                       id="batch-1")
        member = q.get("b-1")
        assert info.id == "batch-1" and member is not None and member.topic == "order.close"
        assert member.body == {"order_id": 4}


def test_async_queue_reply_and_dead_end(redis_url: str, queue_name: str) -> None:
    refund = sd.task("order.refund", body=Refund, result=int)

    async def main() -> None:
        async with sd.AsyncQueue(queue_name, url=redis_url, keep_result=60) as aq:
            worker = sd.Worker(aq, group="g", block=0.2)

            @worker.handles(refund)
            async def pay_back(job: sd.Job[Refund]) -> int:
                if job.body.cents < 0:
                    raise ValueError("negative refund")
                return job.body.cents

            good = await aq.enqueue(refund, Refund(order_id=1, cents=250))
            bad = await aq.enqueue(refund, Refund(order_id=2, cents=-1), max_attempts=1)
            assert isinstance(good, sd.AsyncEnqueued)
            serving = asyncio.ensure_future(worker.serve())
            try:
                ok = await good.result(timeout=30)
                dead = await bad.result(timeout=30)
            finally:
                worker.stop()
                await serving
            assert (ok.state, ok.value) == ("succeeded", 250)
            assert dead.state == "dead" and dead.value is None
            assert dead.error is not None and "negative refund" in dead.error
            with pytest.raises(sd.JobNotFound):  # no result kept, no such job
                await sd.AsyncEnqueued(sd.EnqueueResult("never", 0, True, "delayed"), aq,
                                       refund).result()

    asyncio.run(main())


def test_a_result_of_another_shape_is_a_decode_error(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        worker = sd.Worker(q, group="g", block=0.2)

        @worker.handler("order.close")  # an untyped handler of the same topic
        def untyped(job: sd.Job) -> dict[str, str]:
            return {"unexpected": "shape"}

        reply = q.enqueue(close, CloseOrder(order_id=5))
        with serving(worker), pytest.raises(sd.BodyDecodeError, match="Receipt"):
            reply.result(timeout=30)


def test_the_page_example_runs(example_env: dict[str, str]) -> None:
    out = run_example("typed_tasks.py", example_env).splitlines()
    assert out[0].startswith("enqueued ") and out[0].endswith(" delayed")
    assert out[1:] == ["succeeded 4200 Receipt(order_id=42, total_cents=4200)"]
