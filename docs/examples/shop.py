"""The app of docs/testing.md: producer code that schedules a reminder, and the worker that sends
it. Its tests are test_shop.py, next to it."""

import msgspec

import streamdelay as sd


class Reminder(msgspec.Struct):
    """The body of an ``order.remind`` job."""

    order_id: int
    email: str


remind = sd.task("order.remind", body=Reminder, result=str)
queue = sd.Queue("shop")  # no connection until the first call
worker = sd.Worker(queue, group="mail")
outbox: list[str] = []  # stands for the mail server


def checkout(order_id: int, email: str) -> str:
    """Producer code: the order is placed; remind the customer in 30 minutes."""
    reply = queue.enqueue(remind, Reminder(order_id, email), delay=1800, id=f"remind-{order_id}")
    return reply.id


@worker.handles(remind)
def send_reminder(job: sd.Job[Reminder]) -> str:
    """Send the reminder; the mail server refuses order 13 once (the retry sends it)."""
    if job.body.order_id == 13 and job.attempt == 1:
        raise ConnectionError("mail server busy")
    outbox.append(job.body.email)
    return f"reminded {job.body.email}"
