"""The quick-start worker: run it with ``streamdelay worker tasks:worker`` from this folder.

The queue takes its Redis URL from ``STREAMDELAY_URL`` (or ``--url``), else
redis://localhost:6379/0.
"""

import msgspec

import streamdelay as sd


class CloseOrder(msgspec.Struct):
    """The body of an ``order.close`` job; a body that does not match goes dead at once."""

    order_id: int


queue = sd.Queue("orders")
worker = sd.Worker(queue, group="billing", concurrency=8)


@worker.handler("order.close", body=CloseOrder)
async def close_order(job: sd.Job) -> None:
    """Close the order unless it was paid meanwhile (here: just say so)."""
    print(f"closing order {job.body.order_id} (job {job.id}, attempt {job.attempt})", flush=True)
