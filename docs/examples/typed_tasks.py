"""Typed tasks: a topic bound to its body and result types, checked by mypy
(docs/typed-tasks.md)."""

import msgspec

import streamdelay as sd


class CloseOrder(msgspec.Struct):
    """The body of every ``order.close`` job."""

    order_id: int


class Receipt(msgspec.Struct):
    """What closing an order returns."""

    order_id: int
    total_cents: int


close = sd.task("order.close", body=CloseOrder, result=Receipt)
queue = sd.Queue("typed-orders", keep_result=3600)  # results kept one hour
worker = sd.Worker(queue, group="billing")


@worker.handles(close)  # mypy holds it to (job: sd.Job[CloseOrder]) -> Receipt
def close_order(job: sd.Job[CloseOrder]) -> Receipt:
    """``job.body`` is a CloseOrder, decoded from the job's JSON."""
    return Receipt(order_id=job.body.order_id, total_cents=job.body.order_id * 100)


reply = queue.enqueue(close, CloseOrder(order_id=42), delay=1)  # a dict here: a mypy error
queue.enqueue_many([sd.JobSpec(close, CloseOrder(order_id=n)) for n in (43, 44)])
print("enqueued", reply.id, reply.state)
worker.run(until_idle=True)
done = reply.result(timeout=10)  # sd.JobResult[Receipt]
print(done.state, done.value.total_cents, done.value)
