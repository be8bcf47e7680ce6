"""Running one delivery: decode, call the handler, decide how to settle (pure parts + call).

Split in steps so none grows into a god-function: ``open_delivery`` decodes the stream entry,
``call_handler`` runs the user's code under the time limit, ``outcome_of`` turns what happened
into a ``Settlement`` the worker sends to Redis.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..base.errors import BodyDecodeError, ConfigError, StreamdelayError
from ..base.models import BackoffPolicy, Drop, Job, Retry
from ..base.validation import delay_ms
from ..protocol.codec import blob_backoff, decode_blob, decode_body, parse_record
from .backoff import retry_delay

HandlerFn = Callable[[Job], Awaitable[None]] | Callable[[Job], None]
ERROR_TEXT_LIMIT = 2000


@dataclass(frozen=True)
class Handler:
    """A registered handler: the function, its body type and whether it is a coroutine."""

    fn: HandlerFn
    body_type: Any
    is_async: bool

    @classmethod
    def wrap(cls, fn: HandlerFn, body_type: Any) -> Handler:
        """Register ``fn`` (def or async def) with an optional body type."""
        if body_type is not None:
            try:  # refused now, not at every delivery
                msgspec.json.Decoder(body_type)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"body: {body_type!r} is not a type to decode bodies into "
                                  f"({exc})", field="body") from exc
        return cls(fn, body_type, inspect.iscoroutinefunction(fn))


@dataclass
class Delivery:
    """One delivery held by this worker, from read until settled."""

    partition: int
    topic: str
    entry_id: str
    job_id: str = ""
    ttr_ms: int = 60_000
    last_touch: float = field(default_factory=time.monotonic)
    lost: bool = False
    task: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[int, str, str]:
        """Identity of the delivery inside the worker."""
        return (self.partition, self.topic, self.entry_id)


@dataclass(frozen=True)
class Settlement:
    """How to settle a delivery: ack, retry after ``delay_ms``, or dead now."""

    kind: str  # "ack" | "retry" | "dead"
    delay_ms: int = 0
    error: str = ""


def open_delivery(
    delivery: Delivery, fields: dict[Any, Any] | None, handler: Handler,
    max_body_bytes: int | None = None,
) -> tuple[Job | None, BackoffPolicy | None, Settlement | None]:
    """Decode a stream entry into a ``Job``; a bad entry gives a dead ``Settlement`` instead.

    A body over ``max_body_bytes`` (written by a foreign producer) is dead, never run.
    """
    if not fields or b"id" not in fields:
        return None, None, Settlement("dead", error="envelope: stream entry without a job id")
    raw_id = bytes(fields[b"id"])
    delivery.job_id = raw_id.decode(errors="replace")
    if not raw_id or delivery.job_id.encode() != raw_id:  # no producer writes such an id
        return None, None, Settlement("dead", error="envelope: job id is empty or not UTF-8")
    try:
        record = parse_record(fields.get(b"rec", b""))
        delivery.ttr_ms = record.ttr_ms
        blob = decode_blob(record.blob)
        if max_body_bytes is not None and len(blob.body) > max_body_bytes:
            raise BodyDecodeError(f"body: {len(blob.body)} bytes is over the limit of "
                                  f"{max_body_bytes}")
        body = decode_body(blob.fmt, blob.body, handler.body_type)
    except StreamdelayError as exc:
        return None, None, Settlement("dead", error=f"{type(exc).__name__}: {exc}")
    job = Job(
        id=delivery.job_id, topic=delivery.topic, body=body, due=record.due,
        created=record.created, attempt=record.attempts + 1, max_attempts=record.max_attempts,
        ttr=record.ttr_ms / 1000, headers=blob.headers, entry_id=delivery.entry_id,
        partition=delivery.partition,
    )
    return job, blob_backoff(blob), None


async def call_handler(
    handler: Handler, job: Job, timeout: float | None, executor: Executor | None
) -> None:
    """Run the handler (in ``executor`` when it is a plain def), bounded by ``timeout``."""
    if handler.is_async:
        awaitable: Awaitable[Any] = handler.fn(job)  # type: ignore[assignment]
    else:
        loop = asyncio.get_running_loop()
        awaitable = loop.run_in_executor(executor, handler.fn, job)
    if timeout is None:
        await awaitable
    elif sys.version_info >= (3, 11):  # no extra task and future per job, unlike wait_for
        async with asyncio.timeout(timeout):
            await awaitable
    else:
        await asyncio.wait_for(awaitable, timeout)


def describe_error(exc: BaseException) -> str:
    """``Type: message`` plus the head of the traceback, bounded in size."""
    head = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
    return f"{type(exc).__name__}: {exc}\n{head}"[:ERROR_TEXT_LIMIT]


def outcome_of(
    exc: BaseException | None, job: Job, backoff: BackoffPolicy, elapsed: float,
    timeout: float | None,
) -> Settlement:
    """Turn a handler's result into a settlement (``Retry``, ``Drop``, timeouts, errors)."""
    if exc is None or isinstance(exc, Drop):
        return Settlement("ack")
    if isinstance(exc, Retry):
        return Settlement("retry", delay_ms(exc.delay), f"Retry: {exc}")
    if isinstance(exc, BodyDecodeError):
        return Settlement("dead", error=describe_error(exc))
    if isinstance(exc, asyncio.TimeoutError) and timeout is not None and elapsed >= timeout:
        error = f"HandlerTimeout: handler ran longer than handler_timeout={timeout:g}s"
    else:
        error = describe_error(exc)
    return Settlement("retry", delay_ms(retry_delay(backoff, job.attempt)), error)
