"""Typed tasks misused: mypy --strict reports an error on each line marked ``# E: <text>`` and on
no other line (tests/unit/test_typed_tasks_mypy.py). Never run: it is type-checked only."""

from __future__ import annotations

import msgspec

import streamdelay as sd


class CloseOrder(msgspec.Struct):
    """The body of an ``order.close`` job."""

    order_id: int


class Refund(msgspec.Struct):
    """Another Struct."""

    order_id: int


class Receipt(msgspec.Struct):
    """What its handler returns."""

    total_cents: int


close = sd.task("order.close", body=CloseOrder, result=Receipt)
queue = sd.Queue("orders")
worker = sd.Worker(queue)

queue.enqueue(close, {"order_id": 42})  # E: B
queue.enqueue(close, Refund(order_id=42))  # E: B
queue.enqueue(close, CloseOrder(order_id=42), delay="soon")  # E: No overload variant
sd.JobSpec(close, Refund(order_id=1))  # E: B
sd.JobSpec(close, {"order_id": 1})  # E: B


@worker.handles(close)  # E: Job[Refund]
def wrong_body(job: sd.Job[Refund]) -> Receipt:
    """Its parameter is a job of another body type."""
    return Receipt(total_cents=1)


@worker.handles(close)  # E: Refund
def wrong_result(job: sd.Job[CloseOrder]) -> Refund:
    """It returns another type than the task's result."""
    return Refund(order_id=1)


@worker.handles(close)  # E: Coroutine
async def wrong_async_result(job: sd.Job[CloseOrder]) -> int:
    """An async def returning another type."""
    return 1


def read() -> None:
    """The typed result's value is a Receipt, not a dict."""
    done = queue.enqueue(close, CloseOrder(order_id=1)).result(timeout=5)
    done.value["total_cents"]  # E: not indexable
    worker.handles("order.close")  # E: handles
