"""The shop's tasks: plain Django tasks, run by `manage.py streamdelay_worker`."""

import asyncio

try:
    from django.tasks import task  # Django >= 6.0
except ImportError:  # Django 4.2-5.2: the django-tasks backport
    from django_tasks import task


class PaymentDeclined(Exception):
    """The card was refused."""


@task(queue_name="emails")
def send_receipt(order_id: int, email: str) -> dict:
    return {"order": order_id, "sent_to": email}


@task(priority=50, takes_context=True)
def close_order(context, order_id: int) -> dict:
    return {"order": order_id, "attempt": context.attempt}


@task()
async def refresh_stock(sku: str) -> int:
    await asyncio.sleep(0.01)  # an async task runs on an event loop of the worker's thread
    return len(sku)


@task()
def charge(order_id: int, amount_cents: int) -> int:
    if amount_cents > 100_000:
        raise PaymentDeclined(f"order {order_id}: {amount_cents} is over the card's limit")
    return amount_cents
