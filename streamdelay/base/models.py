"""Public value types: what callers pass in and get back."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypedDict, overload

from .errors import ValidationError
from .results import EnqueueResult as EnqueueResult  # one import path for every data type
from .results import EnqueueState as EnqueueState
from .tasks import B, R, Task

if TYPE_CHECKING:  # a default (PEP 696): a bare ``sd.Job`` stays ``sd.Job[Any]`` under --strict
    from typing_extensions import TypeVar, Unpack

    BodyT = TypeVar("BodyT", default=Any)
    ValueT = TypeVar("ValueT", default=Any)
else:
    from typing import TypeVar

    BodyT = TypeVar("BodyT")
    ValueT = TypeVar("ValueT")

JobState = Literal["delayed", "ready", "reserved", "dead", "done", "waiting"]
# What enqueue found under an existing id: a job in its stream is "ready" (reserved or not),
# "corrupt" a record it could not read (docs/keys.md)
Delay = float | int | timedelta
At = datetime | float | int


@dataclass(frozen=True)
class Backoff:
    """Exponential retry delay: ``base * 2**(attempt-1)`` seconds with full jitter, capped."""

    base: float = 1.0
    cap: float = 3600.0
    jitter: bool = True

    def __post_init__(self) -> None:
        for name in ("base", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    0 <= value < math.inf):
                raise ValidationError(f"backoff: {name} must be a finite number of seconds >= 0",
                                      field="backoff")


BackoffPolicy = Backoff | list[float] | tuple[float, ...]


@dataclass(frozen=True, init=False)
class JobSpec:
    """One job for ``enqueue_many``; the fields mirror ``Queue.enqueue``'s arguments."""

    topic: str
    body: Any = None
    delay: Delay | None = None
    at: At | None = None
    id: str | None = None
    ttr: Delay | None = None
    max_attempts: int | None = None
    backoff: BackoffPolicy | None = None
    headers: dict[str, str] | None = None
    replace: bool = False
    max_wait: Delay | None = None  # with replace: never due later than first enqueue + this
    keep_result: Delay | None = None  # None: the queue's keep_result (docs/results.md)
    priority: int | None = None  # 0-9, higher first; None: 5 (docs/producer.md#priorities)
    key: str | None = None  # fairness key (docs/producer.md#fairness-keys)
    expires: Delay | None = None  # never run later than this after its due time
    keep_done: Delay | None = None  # None: the queue's keep_done (docs/producer.md#keep_done)

    @overload  # a typed task: its body type only (docs/typed-tasks.md)
    def __init__(self, topic: Task[B, Any], body: B, **options: Unpack[JobOptions]
                 ) -> None: ...
    @overload
    def __init__(self, topic: str, body: Any = None, delay: Delay | None = None,
                 at: At | None = None, id: str | None = None, ttr: Delay | None = None,
                 max_attempts: int | None = None, backoff: BackoffPolicy | None = None,
                 headers: dict[str, str] | None = None, replace: bool = False,
                 max_wait: Delay | None = None, keep_result: Delay | None = None,
                 priority: int | None = None, key: str | None = None,
                 expires: Delay | None = None, keep_done: Delay | None = None) -> None: ...
    def __init__(self, topic: str | Task[Any, Any], body: Any = None,
                 delay: Delay | None = None, at: At | None = None, id: str | None = None,
                 ttr: Delay | None = None, max_attempts: int | None = None,
                 backoff: BackoffPolicy | None = None, headers: dict[str, str] | None = None,
                 replace: bool = False, max_wait: Delay | None = None,
                 keep_result: Delay | None = None, priority: int | None = None,
                 key: str | None = None, expires: Delay | None = None,
                 keep_done: Delay | None = None) -> None:
        """The generated ``__init__``'s arguments, set in one go: a frozen dataclass sets its
        fields one ``object.__setattr__`` at a time (~0.3 µs more per job of ``enqueue_many``).
        A typed task is kept as its topic string (the wire's)."""
        if type(topic) is not str and isinstance(topic, Task):
            topic = topic.name
        self.__dict__.update(topic=topic, body=body, delay=delay, at=at, id=id, ttr=ttr,
                             max_attempts=max_attempts, backoff=backoff, headers=headers,
                             replace=replace, max_wait=max_wait, keep_result=keep_result,
                             priority=priority, key=key, expires=expires, keep_done=keep_done)


@dataclass(frozen=True)
class JobInfo:
    """A job read by id (``Queue.get``) or listed (``Queue.jobs``). ``due`` and ``created`` are
    epoch ms (server clock); ``idle_ms`` and ``ttr_ms`` are milliseconds; ``ttr`` is the same
    time-to-run in seconds, the unit ``enqueue(ttr=...)`` takes (kept for compatibility). A dead
    job's ``died`` is when it went dead (its dead-letter entry's time); ``due`` stays the due
    time of its last attempt."""

    id: str
    topic: str
    state: JobState
    due: int
    created: int
    attempts: int
    max_attempts: int
    ttr: float
    body: Any
    headers: dict[str, str]
    consumer: str | None = None
    idle_ms: int | None = None
    deliveries: int | None = None
    error: str | None = None
    ttr_ms: int = 0
    progress: Any = None  # the last progress its handler reported while it runs
    priority: int = 5  # 0-9 (docs/producer.md#priorities)
    key: str | None = None  # its fairness key, if it has one
    expires_at: int | None = None  # epoch ms (server clock) after which it never starts
    # parent id -> "pending" | "succeeded" | "dead" | "cancelled", for a job enqueued with after=
    parents: dict[str, str] | None = None
    children: list[str] | None = None  # the jobs (and "batch:<id>") waiting for it
    died: int | None = None  # a dead job: when it went dead, epoch ms (server clock)


@dataclass(frozen=True)
class TopicStats:
    """Counts of one topic; ``lag_ms`` is how long the oldest due, undelivered job has waited."""

    topic: str
    delayed: int
    ready: int
    reserved: int
    dead: int
    lag_ms: int
    group: str | None
    paused: bool = False  # set by pause(topic): no worker starts its jobs (docs/operations.md)
    rate: str | None = None  # the topic's rate limit, e.g. "100/s" (docs/limits.md)
    concurrency: int | None = None  # the topic's concurrency limit across all workers
    leases: int = 0  # leases held now under the concurrency limit (jobs running)
    staged: bool = False  # priorities or fairness keys: taken in turns (docs/priorities.md)
    keys: tuple[tuple[str, int], ...] = ()  # the keys with the most ready jobs ("": no key)
    key_rate: str | None = None  # the limit each fairness key is held to (docs/limits.md)
    key_concurrency: int | None = None
    waiting: int = 0  # jobs waiting for their parents (docs/workflows.md)


@dataclass(frozen=True)
class QueueStats:
    """Per-topic counts of a queue, summed over its partitions."""

    queue: str
    now: int
    topics: dict[str, TopicStats] = field(default_factory=dict)

    @property
    def total(self) -> TopicStats:
        """All topics added up (``lag_ms`` is the largest)."""
        rows = list(self.topics.values())
        return TopicStats(
            topic="*",
            delayed=sum(r.delayed for r in rows),
            ready=sum(r.ready for r in rows),
            reserved=sum(r.reserved for r in rows),
            dead=sum(r.dead for r in rows),
            lag_ms=max((r.lag_ms for r in rows), default=0),
            group=None,
            waiting=sum(r.waiting for r in rows),
        )


@dataclass(frozen=True)
class DeadJob:
    """One dead-letter entry: the job id, its last error and how many attempts it had."""

    id: str
    topic: str
    error: str
    attempts: int
    at: int
    entry_id: str


@dataclass(frozen=True)
class ClaimResult:
    """What a claim moved: re-queued (or handed) ids, ids that went dead, stale entries cleaned,
    and the consumers removed because they were gone and owned nothing."""

    moved: list[str]
    dead: list[str]
    cleaned: int
    removed: list[str] = field(default_factory=list)


class JobControl(Protocol):
    """What a job's delivery offers its handler (consume/delivery.py ``Delivery``)."""

    aborted: bool

    def keep_checkpoint(self, data: bytes) -> None:
        """Keep an encoded checkpoint for the next heartbeat."""


@dataclass(frozen=True)
class Job(Generic[BodyT]):
    """One delivery of a job, as a handler receives it.

    ``attempt`` counts from 1 and includes deliveries lost to crashed workers. ``sd.Job[T]``:
    a job whose ``body`` was decoded into ``T`` (``body=`` of the handler, or its typed task).
    """

    id: str
    topic: str
    body: BodyT
    due: int
    created: int
    attempt: int
    max_attempts: int
    ttr: float
    headers: dict[str, str]
    entry_id: str
    partition: int
    keep_result_ms: int = 0  # how long its result is kept (0: not kept; docs/results.md)
    # its own keep_done in ms (None: the worker's queue's; docs/producer.md#keep_done)
    keep_done_ms: int | None = None
    # where progress goes: set by the worker that delivers it (consume/delivery.py)
    _report: Callable[[bytes], None] | None = field(default=None, repr=False, compare=False)
    # the checkpoint an earlier run of the job left (docs/worker.md#checkpoints); None: none
    last_checkpoint: Any = None
    # the delivery's control (consume/delivery.py: checkpoints, abort); set by the worker
    _control: JobControl | None = field(default=None, repr=False, compare=False)

    def progress(self, value: Any) -> None:
        """Report the job's progress (a number or a small JSON value, at most 1 KiB of JSON):
        the worker sends the latest value with its next heartbeat (within about 1 s), and
        ``Queue.get`` shows it while the job runs (docs/results.md#progress). No I/O here:
        call it as often as you like, from def and async def handlers."""
        from .validation import progress as checked

        data = checked(value)
        if self._report is None:
            raise ValidationError("progress: this job was not delivered by a Worker (a "
                                  "Reservation reports it with touch(progress=))",
                                  field="progress")
        self._report(data)

    def checkpoint(self, value: Any) -> None:
        """Keep ``value`` (msgspec-encodable, at most 64 KiB of JSON) as this job's progress
        across redeliveries: the next attempt of the job reads it as ``job.last_checkpoint``
        (docs/worker.md#checkpoints). No I/O here: the worker sends the latest value with a
        heartbeat (within about a second), with a failure or snooze, and at a graceful
        shutdown. A value that cannot be encoded or is too big raises ``ValidationError``
        (field ``checkpoint``)."""
        from .control import checkpoint as checked

        data = checked(value)
        if self._control is None:
            raise ValidationError("checkpoint: this job was not delivered by a Worker (a "
                                  "Reservation sends it with touch(checkpoint=))",
                                  field="checkpoint")
        self._control.keep_checkpoint(data)

    @property
    def aborted(self) -> bool:
        """True once the job was aborted (``Queue.cancel(id, abort=True)``) while this run
        goes on: a ``def`` handler checks it between steps (docs/worker.md#abort)."""
        return self._control is not None and self._control.aborted

    def check_abort(self) -> None:
        """Raise ``sd.Aborted`` when the job was aborted (see ``aborted``)."""
        if self._control is not None and self._control.aborted:
            from .errors import Aborted

            raise Aborted(f"job {self.id!r} was aborted", job_id=self.id, topic=self.topic)


class Retry(Exception):
    """Raise from a handler to retry after ``delay`` seconds (counts as a failed attempt)."""

    def __init__(self, delay: Delay = 0.0, reason: str = "retry requested") -> None:
        from .validation import seconds  # local: validation's types live here

        super().__init__(reason)
        self.delay = seconds(delay, "delay")  # a bad delay fails the handler, not the worker


class Drop(Exception):
    """Raise from a handler to acknowledge the job without running it again."""


@dataclass(frozen=True)
class JobResult(Generic[ValueT]):
    """How a job ended (``Queue.result``): ``state`` is ``succeeded`` (``value``: what the handler
    returned), ``dead`` or ``cancelled`` (``error``: why); ``finished`` is epoch ms (server
    clock). Kept for the job's ``keep_result`` seconds (docs/results.md). ``sd.JobResult[T]``:
    the result of a typed task, ``value`` decoded into ``T`` (None unless ``succeeded``)."""

    id: str
    state: Literal["succeeded", "dead", "cancelled"]
    if TYPE_CHECKING:  # None unless succeeded
        value: ValueT = None  # type: ignore[assignment]
    else:  # any value at run time: the HTTP API's schema of a result (docs/http.md#results)
        value: Any = None
    error: str | None = None
    finished: int = 0


class JobOptions(TypedDict, total=False):
    """The options of one job, as ``Queue.enqueue`` and ``JobSpec`` take them (by keyword)."""

    delay: Delay | None
    at: At | None
    id: str | None
    ttr: Delay | None
    max_attempts: int | None
    backoff: BackoffPolicy | None
    headers: dict[str, str] | None
    replace: bool
    max_wait: Delay | None
    keep_result: Delay | None
    priority: int | None
    key: str | None
    expires: Delay | None
    keep_done: Delay | None


class EnqueueOptions(JobOptions, total=False):
    """``JobOptions`` and the workflow options of ``Queue.enqueue`` (docs/workflows.md)."""

    after: Sequence[str] | None
    on_parent_failure: str


class TaskHandlers(Generic[B, R]):
    """What ``Worker.handles(task)`` returns: a decorator whose argument the type checker holds
    to ``(job: sd.Job[B]) -> R`` (def) or ``-> Awaitable[R]`` (async def); it registers the
    function and returns it unchanged."""

    def __init__(self, register: Callable[[Any], Any]) -> None:
        self._register = register

    @overload
    def __call__(self, fn: Callable[[Job[B]], Awaitable[R]]
                 ) -> Callable[[Job[B]], Awaitable[R]]: ...
    @overload
    def __call__(self, fn: Callable[[Job[B]], R]) -> Callable[[Job[B]], R]: ...
    def __call__(self, fn: Any) -> Any:
        """Register ``fn`` as the task's handler; returns ``fn``."""
        return self._register(fn)
