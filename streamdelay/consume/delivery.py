"""Running one delivery: decode, call the handler, decide how to settle (pure parts + call).

Split in steps so none grows into a god-function: ``open_delivery`` decodes the stream entry,
``call_handler`` runs the user's code under the time limit, ``outcome_of`` turns what happened
into a ``Settlement`` the worker sends to Redis.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..base.control import Snooze
from ..base.errors import Aborted, BodyDecodeError, ConfigError, ValidationError
from ..base.models import BackoffPolicy, Drop, Job, Retry
from ..base.validation import delay_ms
from ..protocol.backoff import failure_delay_ms
from ..protocol.codec import Serializer
from ..protocol.deliveries import EXPIRED, open_entry
from ..protocol.result_codec import DEFAULT_MAX_RESULT_BYTES, encode_result
from ..telemetry.job_logs import JobRun
from .error_text import describe_error
from .time_limits import run_limited

log = logging.getLogger("streamdelay.worker")
HandlerFn = Callable[[Job], Awaitable[None]] | Callable[[Job], None]


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
    size: int = 0  # bytes of the job record: bounds the ack batches (acks.py)
    last_touch: float = field(default_factory=time.monotonic)
    began: float = field(default_factory=time.time)  # epoch s: the Workers page's "for how long"
    lost: bool = False
    task: asyncio.Task[None] | None = None
    # the thread running a def handler: while it runs, the delivery holds its slot and its job
    thread: concurrent.futures.Future[None] | None = None
    handler_s: float | None = None  # how long its handler ran (None: it did not run)
    run: JobRun | None = None  # the observed run (debug logs, span), when observed
    keep_result_ms: int = 0  # the job's keep_result: a dead end keeps its error that long
    keep_done_ms: int | None = None  # the job's own keep_done (None: the queue's), for its ack
    progress: bytes | None = None  # the handler's last progress (JSON), sent with each touch
    progress_fresh: bool = False  # reported since the last touch: touched within PROGRESS_EVERY
    read_ms: int = 0  # the server clock read with the entry (0: not read), docs/expiry.md
    # read new (XREADGROUP '>') with read_ms, and no heartbeat sent for it since: its settle's
    # 'started' event takes read_ms instead of reading the pending list (docs/events.md#started)
    fresh: bool = False
    # execution control (docs/worker.md#abort, #checkpoints): set when the job was aborted
    # (consume/paused_topics.py reads the aborts), the latest checkpoint and whether it was sent
    aborted: bool = False
    checkpoint: bytes | None = None
    checkpoint_fresh: bool = False
    # THE abort hook (docs/worker.md#abort): callables run once, on the event loop, when the
    # job is aborted, after ``aborted`` is set. A delivery with hooks is left to them (its task
    # is not cancelled): the process executor adds one that terminates the child running the
    # handler (SIGTERM, then SIGKILL after abort_grace) and lets its run end as usual. None
    # until one is added: a plain delivery pays nothing.
    on_abort: list[Callable[[Delivery], None]] | None = None

    def keep_checkpoint(self, data: bytes) -> None:
        """``Job.checkpoint``'s sink: keep the latest value for the next heartbeat (any
        thread; two attribute writes, no I/O)."""
        self.checkpoint = data
        self.checkpoint_fresh = True

    def abort(self) -> None:
        """The job was aborted while this delivery runs (``cancelJob`` with its abort flag,
        read by the pause watch): mark it (``job.aborted``), then run the ``on_abort`` hooks
        if any, else cancel the task unless a def handler's thread runs it (a thread cannot
        be stopped: its handler sees ``job.aborted``). Its settle then finds the job gone."""
        if self.aborted:
            return
        self.aborted = True
        if self.on_abort:
            for hook in self.on_abort:
                try:
                    hook(self)
                except Exception:  # one failing hook must not keep the others from running
                    log.exception("job %s: an abort hook failed", self.job_id)
        elif self.thread is None and self.task is not None and not self.task.done():
            self.task.cancel()

    def report_progress(self, data: bytes) -> None:
        """``Job.progress``'s sink: keep the latest value for the next heartbeat (any thread;
        two attribute writes, no I/O)."""
        self.progress = data
        self.progress_fresh = True

    @property
    def started_ms(self) -> int:
        """The read time its settle dates ``started`` with (0: the settle reads the pending
        list: not read fresh, or a heartbeat, which may have reported it, was sent)."""
        return self.read_ms if self.fresh else 0

    def touching(self) -> None:
        """A heartbeat for it is being sent: that touch may report ``started``."""
        self.fresh = False

    def touched(self, now: float, sent: bytes | None, lost: bool) -> bool:
        """The heartbeat's write (``upkeep.touch``): touched at ``now`` carrying the progress
        ``sent``; ``lost`` when this consumer no longer owns the entry. True when it was just
        found lost."""
        if self.progress is sent:  # none reported meanwhile
            self.progress_fresh = False
        self.last_touch = now
        if lost and not self.lost:
            self.lost = True
            return True
        return False

    @property
    def thread_running(self) -> bool:
        """True while a def handler's thread for this delivery has not returned."""
        return self.thread is not None and not self.thread.done()

    async def finished(self) -> None:
        """Wait until this delivery's run has ended: its task, then its handler's thread."""
        if self.task is not None and not self.task.done():
            await asyncio.wait((self.task,))
        if self.thread is not None and not self.thread.done():
            await asyncio.wait((asyncio.wrap_future(self.thread),))

    @property
    def key(self) -> tuple[int, str, str]:
        """Identity of the delivery inside the worker."""
        return (self.partition, self.topic, self.entry_id)


@dataclass(frozen=True)
class Settlement:
    """How to settle a delivery: ack, retry after ``delay_ms``, dead now, or expired (its
    job's deadline passed before it ran: docs/expiry.md)."""

    kind: str  # "ack" | "retry" | "snooze" | "dead" | "expired"
    delay_ms: int = 0
    error: str = ""
    result: tuple[int, bytes] | None = None  # an ack's (keep_result ms, encoded result)


ACKED = Settlement("ack")  # the settlement of every success: one object, not one per job
EXPIRED_NOW = Settlement("expired", error=EXPIRED)


def open_delivery(
    delivery: Delivery, fields: dict[Any, Any] | None, handler: Handler,
    max_body_bytes: int | None = None,
) -> tuple[Job | None, BackoffPolicy | None, Settlement | None]:
    """Decode a stream entry into a ``Job`` (``protocol.deliveries.open_entry``); a bad entry
    gives a dead ``Settlement`` instead, an entry whose job's deadline the read's clock has
    reached an expired one."""
    opened = open_entry(fields, delivery.topic, delivery.entry_id, delivery.partition,
                        handler.body_type, max_body_bytes, delivery.read_ms)
    delivery.job_id, delivery.ttr_ms, delivery.size = opened.job_id, opened.ttr_ms, opened.size
    if opened.expired:
        return None, None, EXPIRED_NOW
    if opened.job is None:
        return None, None, Settlement("dead", error=opened.error)
    delivery.keep_result_ms = opened.job.keep_result_ms
    delivery.keep_done_ms = opened.job.keep_done_ms
    object.__setattr__(opened.job, "_report", delivery.report_progress)  # Job.progress
    object.__setattr__(opened.job, "_control", delivery)  # Job.checkpoint, Job.aborted
    return opened.job, opened.backoff, None


async def call_handler(
    handler: Handler, job: Job, timeout: float | None, executor: Executor | None,
    delivery: Delivery | None = None,
) -> Any:
    """Run the handler (in ``executor`` when it is a plain def), bounded by ``timeout``;
    returns what it returned (the job's result, docs/results.md).

    A def handler's thread cannot be stopped: see ``run_in_thread``.
    """
    if not handler.is_async:
        return await run_in_thread(handler.fn, job, timeout, executor, delivery)
    awaitable: Awaitable[Any] = handler.fn(job)  # type: ignore[assignment]
    if timeout is None:
        return await awaitable
    if sys.version_info >= (3, 11):  # shared timers: no timer, task or future per job
        return await run_limited(awaitable, timeout)
    return await asyncio.wait_for(awaitable, timeout)


async def run_in_thread(
    fn: Callable[[Job], Any], job: Job, timeout: float | None, executor: Executor | None,
    delivery: Delivery | None = None,
) -> Any:
    """Run a def handler in a thread; ``timeout`` counts from the moment the thread starts it.

    Python cannot stop a thread: one still running at ``timeout`` is logged and waited for (its
    delivery keeps its slot, its heartbeats and its job, so the job never runs twice at once);
    when it returns, the run is reported as timed out (``asyncio.TimeoutError``) whatever it
    returned or raised (docs/worker.md#handler_timeout).
    """
    span: list[float] = []  # when the thread started and ended the handler

    def run() -> Any:
        span.append(time.monotonic())
        try:
            return fn(job)
        finally:
            span.append(time.monotonic())

    if executor is None:
        raise RuntimeError("a def handler needs the worker's thread pool (serve() creates it)")
    thread = executor.submit(contextvars.copy_context().run, run)  # the job's span, if any
    if delivery is not None:
        delivery.thread = thread
    future = asyncio.wrap_future(thread)
    if timeout is None:
        return await future
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle

    def check() -> None:  # at the deadline: warn about an overrun, or look again when due
        nonlocal timer
        if len(span) == 1 and (left := span[0] + timeout - time.monotonic()) > 0:
            timer = loop.call_later(left, check)
        elif len(span) == 1:
            log.warning("job %s (%s): its def handler still runs after handler_timeout=%gs; "
                        "the job stays reserved by this worker until the thread returns",
                        job.id, job.topic, timeout, extra={"topic": job.topic, "job_id": job.id,
                                                            "attempt": job.attempt})
        elif not span:  # not started yet: the time counts from its start
            timer = loop.call_later(timeout, check)

    timer = loop.call_later(timeout, check)
    try:
        value = await future
    except Exception as exc:
        if span[-1] - span[0] >= timeout:
            raise asyncio.TimeoutError(f"handler ran longer than {timeout:g}s") from exc
        raise
    finally:
        timer.cancel()
    if span[-1] - span[0] >= timeout:
        raise asyncio.TimeoutError(f"handler ran longer than {timeout:g}s")
    return value


def outcome_of(
    exc: BaseException | None, job: Job, backoff: BackoffPolicy, elapsed: float,
    timeout: float | None, value: Any = None, serializer: Serializer = "json",
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> Settlement:
    """Turn a handler's outcome into a settlement (``Retry``, ``Drop``, timeouts, errors); a
    success of a job that keeps its result carries ``value`` encoded (too big or not encodable:
    a failure, docs/results.md)."""
    if exc is None:
        if not job.keep_result_ms:  # results not used: nothing encoded, the shared ACKED
            return ACKED
        try:
            return Settlement("ack", result=(job.keep_result_ms,
                                             encode_result(value, serializer, max_result_bytes)))
        except ValidationError as refused:
            exc = refused
    if isinstance(exc, Drop):  # acknowledged like a success; the text tells them apart
        return Settlement("ack", error=f"Drop: {exc}")
    if isinstance(exc, Snooze):  # back later, no attempt spent (docs/worker.md#snooze)
        return Settlement("snooze", delay_ms(exc.delay), f"Snooze: {exc}")
    if isinstance(exc, Aborted):  # its job is already cancelled: the settle finds it stale
        return Settlement("retry", 0, describe_error(exc))
    if isinstance(exc, Retry):
        return Settlement("retry", delay_ms(exc.delay), f"Retry: {exc}")
    if isinstance(exc, BodyDecodeError):
        return Settlement("dead", error=describe_error(exc))
    if isinstance(exc, asyncio.TimeoutError) and timeout is not None and elapsed >= timeout:
        error = f"HandlerTimeout: handler ran longer than handler_timeout={timeout:g}s"
    else:
        error = describe_error(exc)
    return Settlement("retry", failure_delay_ms(backoff, job.attempt), error)
