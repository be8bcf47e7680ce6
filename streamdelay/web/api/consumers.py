"""Consumer routes of the JSON API (docs/http.md#consumers): reserve with a long poll, then
ack, fail or touch by receipt. They drive ``AsyncQueue.reserve`` and the reservation a receipt
rebuilds, so an HTTP consumer obeys exactly a Python worker's rules (ttr and reclaim,
attempts, backoff, dead letters); a stale receipt is a 409."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from litestar import Request, Response, post
from litestar.openapi import ResponseSpec

from ...client.queue import AsyncQueue
from ..auth import needs, principal_of
from .api_models import (
    AckBody,
    FailBody,
    ReserveAnswer,
    ReserveBody,
    Settled,
    TouchBody,
    seconds_of,
)
from .bodies import body, decode, decode_optional
from .common import PREFIX, WRITE_ERRORS, QueueParam, ReceiptParam, TopicParam, errors, served
from .handover import HandOver, carry

CONSUME = needs("consume")
# A long poll waits in slices, so a stopping service answers within one (docs/http.md#serve).
POLL_SLICE = 1.0


def default_consumer(request: Request[Any, Any, Any]) -> str:
    """The consumer name of a request that gives none: ``http-<token name>``."""
    principal = principal_of(request)
    return f"http-{principal.name if principal else 'anonymous'}"


@post(f"{PREFIX}/topics/:reserve/{{topic:str}}", opt=CONSUME, status_code=200,
      tags=["consumers"], operation_id=body("reserve", ReserveBody, False),
      summary="Take jobs (long poll)",
      responses={204: ResponseSpec(None, description="No job came within wait_ms."),
                 **errors(*WRITE_ERRORS, 409)})
async def reserve(request: Request[Any, Any, Any], queue: QueueParam, topic: TopicParam
                  ) -> Response[ReserveAnswer]:
    """Take up to ``count`` (<= 100) ready jobs of the topic, waiting up to ``wait_ms``
    (<= 30000) for one; 204 when none came. Settle each by its receipt within its ttr."""
    target = served(request, queue)
    data = await decode_optional(request, ReserveBody) or ReserveBody()
    consumer = data.consumer or default_consumer(request)
    draining = request.app.state.service.draining
    deadline = time.monotonic() + data.wait_ms / 1000
    # the body is read: the next message from the server is the client's disconnect
    gone = asyncio.ensure_future(request.receive())
    answer: HandOver | None = None
    try:
        while True:
            left = max(0.0, deadline - time.monotonic())
            wait = min(POLL_SLICE, left)
            found = await target.reserve(topic, group=data.group, consumer=consumer,
                                         wait=wait, count=data.count)
            if found:  # delivered, dead-lettered or handed back: never held for nobody
                answer = await carry(request, queue, target, data.group, found, gone)
                if answer is not None:
                    return answer
            if wait >= left or draining.is_set() or gone.done():
                return Response(None, status_code=204)  # type: ignore[arg-type]
    finally:
        if answer is None:  # else the answer cancels it once sent
            gone.cancel()


async def settle(target: AsyncQueue, receipt: str, action: str,
                 data: FailBody | AckBody | TouchBody | None = None) -> Settled:
    """Ack, fail or touch the delivery of ``receipt`` (these routes and the fast path of
    ``web/fastpath.py``); the reservation reports the outcome to the queue's consumer
    observer (the metrics, the dashboard's throughput: docs/design.md#observer)."""
    reservation = target.reservation(receipt)
    if action == "touch":
        if isinstance(data, TouchBody):
            await reservation.touch(data.progress, checkpoint=data.checkpoint)
        else:
            await reservation.touch()
        return Settled("touched")
    done = ""
    if action == "ack":
        await reservation.ack(data.result if isinstance(data, AckBody) else None)
        outcome = "handled"
    else:
        assert isinstance(data, FailBody)
        done = await reservation.fail(data.error, seconds_of(data.retry_delay, "retry_delay"),
                                      data.dead, snooze=seconds_of(data.snooze, "snooze"),
                                      checkpoint=data.checkpoint)
        outcome = "dead" if done == "dead" else "retried"  # a snooze counts as a worker's does
    if outcome == "retried" and done == "snoozed":
        return Settled("snoozed")
    return Settled("acked" if outcome == "handled" else outcome)  # type: ignore[arg-type]


@post(f"{PREFIX}/deliveries/:ack/{{receipt:str}}", opt=CONSUME, status_code=200,
      tags=["consumers"], operation_id=body("ack", AckBody, False), summary="The job is done",
      responses=errors(*WRITE_ERRORS, 409))
async def ack(request: Request[Any, Any, Any], queue: QueueParam, receipt: ReceiptParam) -> Settled:
    """Acknowledge the delivery: the job is forgotten (or kept as ``done`` when the queue keeps
    finished jobs); ``result`` is kept for the job's ``keep_result``."""
    data = await decode_optional(request, AckBody)
    return await settle(served(request, queue), receipt, "ack", data)


@post(f"{PREFIX}/deliveries/:fail/{{receipt:str}}", opt=CONSUME, status_code=200,
      tags=["consumers"], operation_id=body("fail", FailBody), summary="The attempt failed",
      responses=errors(*WRITE_ERRORS, 409))
async def fail(request: Request[Any, Any, Any], queue: QueueParam, receipt: ReceiptParam
               ) -> Settled:
    """Retry after ``retry_delay`` (else the job's backoff), or dead after the last attempt
    or with ``dead``."""
    data = await decode(request, FailBody)
    return await settle(served(request, queue), receipt, "fail", data)


@post(f"{PREFIX}/deliveries/:touch/{{receipt:str}}", opt=CONSUME, status_code=200,
      tags=["consumers"], operation_id=body("touch", TouchBody, False),
      summary="Keep the job (heartbeat)", responses=errors(*WRITE_ERRORS, 409))
async def touch(request: Request[Any, Any, Any], queue: QueueParam, receipt: ReceiptParam
                ) -> Settled:
    """The ttr counts again from now: call it well within each ttr while working; an optional
    ``progress`` is shown by the job's routes while it runs."""
    data = await decode_optional(request, TouchBody)
    return await settle(served(request, queue), receipt, "touch", data)


ROUTES = [reserve, ack, fail, touch]
