"""Typed tasks as a user writes them: mypy --strict passes this file with no error
(tests/unit/test_typed_tasks_mypy.py). Never run: it is type-checked only."""

from __future__ import annotations

import msgspec

import streamdelay as sd


class CloseOrder(msgspec.Struct):
    """The body of an ``order.close`` job."""

    order_id: int


class Receipt(msgspec.Struct):
    """What its handler returns."""

    total_cents: int


close = sd.task("order.close", body=CloseOrder, result=Receipt)
ping = sd.task("ping", body=dict)  # no result type: its handler returns None
queue = sd.Queue("orders", keep_result=3600)
worker = sd.Worker(queue)


@worker.handles(close)
def close_order(job: sd.Job[CloseOrder]) -> Receipt:
    """A def handler: the body is a CloseOrder, the return value a Receipt."""
    return Receipt(total_cents=job.body.order_id * 100)


@worker.handles(ping)
async def pong(job: sd.Job[dict]) -> None:  # type: ignore[type-arg]
    """An async def handler of a task without a result type."""


@worker.handler("legacy.topic")  # string topics and bare sd.Job keep working
def legacy(job: sd.Job) -> None:
    """A plain handler: ``job.body`` is Any."""
    print(job.body["anything"])


def produce() -> int:
    """Enqueue a typed job and read its typed result."""
    reply: sd.Enqueued[Receipt] = queue.enqueue(close, CloseOrder(order_id=42), delay=30)
    done: sd.JobResult[Receipt] = reply.result(timeout=60)
    plain: sd.EnqueueResult = queue.enqueue("legacy.topic", {"x": 1}, delay=5)
    queue.enqueue_many([sd.JobSpec(close, CloseOrder(order_id=43), delay=60),
                        sd.JobSpec("legacy.topic", {"x": 2}, 60)])
    queue.chain([sd.JobSpec(close, CloseOrder(order_id=44), keep_result=60)])
    print(plain.id, close_order(sd.Job[CloseOrder]("id", "order.close", CloseOrder(order_id=1),
                                                 0, 0, 1, 1, 1.0, {}, "0-1", 0)))
    return done.value.total_cents


async def produce_async(aq: sd.AsyncQueue) -> int:
    """The same with the asyncio queue."""
    reply = await aq.enqueue(close, CloseOrder(order_id=42), at=1_900_000_000)
    done = await reply.result(timeout=60)
    return done.value.total_cents
