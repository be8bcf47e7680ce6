"""The request and response bodies of the JSON API (docs/http.md), as msgspec Structs: Litestar
decodes and checks their shape (400 naming the field) and the OpenAPI document is generated from
them. Values are checked by the library itself (``base/validation.py``, 422 naming the field);
``to_spec`` only turns JSON forms (duration strings, ISO times, a backoff object) into the
arguments ``Queue.enqueue`` takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from ...base import validation
from ...base.durations import DURATION_PATTERN, parse_duration
from ...base.errors import ValidationError
from ...base.flows import BatchInfo
from ...base.models import Backoff, BackoffPolicy, DeadJob, EnqueueResult, JobInfo, JobSpec

# The shapes below carry the library's own limits (base/validation.py) so the OpenAPI document
# states them; the library checks the values again (422 naming the field).
Duration = Annotated[str, msgspec.Meta(pattern=DURATION_PATTERN, examples=["30s"])]
Seconds = Annotated[Annotated[float, msgspec.Meta(ge=0, le=validation.MAX_DELAY_SECONDS)]
                    | Duration, msgspec.Meta(
    description="Seconds as a number, or a duration such as \"250ms\", \"30s\", \"5m\", "
                "\"2h\", \"1d\".")]
AtTime = Annotated[Annotated[float, msgspec.Meta(ge=0, le=1e11)] | str, msgspec.Meta(
    description="Epoch seconds, or an ISO 8601 time with an offset "
                "(\"2030-01-31T09:30:00Z\"), on the Redis server clock.")]
Topic = Annotated[str, msgspec.Meta(pattern=validation.TOPIC.pattern, examples=["order.close"])]
JobId = Annotated[str, msgspec.Meta(pattern=validation.ANY_JOB_ID.pattern, examples=["close-42"])]
Priority = Annotated[int, msgspec.Meta(ge=0, le=9, description=(
    "0-9, higher starts first among ready jobs of its topic (default 5)."))]
FairnessKey = Annotated[str, msgspec.Meta(
    pattern=validation.FAIRNESS_KEY.pattern, examples=["tenant-42"], description=(
        "A fairness key (tenant, customer): the job's id becomes {key}<id>."))]
Expires = Annotated[Annotated[float, msgspec.Meta(gt=0, le=validation.MAX_DELAY_SECONDS)]
                    | Duration, msgspec.Meta(
    description="Seconds after its due time past which the job never starts (a number > 0, "
                "or a duration such as \"30s\", \"5m\"); it goes to the dead letters with "
                "reason expired.")]
Group = Annotated[str, msgspec.Meta(pattern=validation.GROUP.pattern)]
Consumer = Annotated[str, msgspec.Meta(pattern=validation.CONSUMER.pattern)]
Attempts = Annotated[int, msgspec.Meta(ge=1, le=validation.MAX_ATTEMPTS_LIMIT)]
Headers = Annotated[dict[str, str], msgspec.Meta(max_length=validation.MAX_HEADERS)]
MAX_BATCH = 10_000


class BackoffBody(msgspec.Struct, forbid_unknown_fields=True):
    """Exponential backoff: ``base * 2**(attempt-1)`` seconds, full jitter, capped."""

    base: Annotated[float, msgspec.Meta(ge=0)] = 1.0
    cap: Annotated[float, msgspec.Meta(ge=0)] = 3600.0
    jitter: bool = True


class EnqueueBody(msgspec.Struct, forbid_unknown_fields=True):
    """One job: ``topic`` and ``body``, due after ``delay`` or ``at`` a time (else now)."""

    topic: Topic
    body: Any = None
    delay: Seconds | None = None
    at: AtTime | None = None
    id: JobId | None = None
    ttr: Seconds | None = None
    max_attempts: Attempts | None = None
    backoff: Annotated[list[Annotated[float, msgspec.Meta(ge=0)]], msgspec.Meta(
        min_length=1, max_length=validation.MAX_ATTEMPTS_LIMIT)] | BackoffBody | None = None
    headers: Headers | None = None
    replace: bool = False
    keep_result: Seconds | None = None
    priority: Priority | None = None
    key: FairnessKey | None = None
    expires: Expires | None = None
    # seconds it stays a done tombstone once acknowledged, over the queue's (docs/producer.md)
    keep_done: Seconds | None = None
    # docs/workflows.md: the ids of the jobs it waits for (one-job enqueue only)
    after: Annotated[list[JobId], msgspec.Meta(min_length=1, max_length=1000)] | None = None
    on_parent_failure: Literal["dead", "run"] = "dead"


class BatchBody(msgspec.Struct, forbid_unknown_fields=True):
    """Many jobs in one request (one round trip to Redis per partition). With ``batch`` (an
    id) or a callback they are the members of a batch (see Workflows in the docs): the batch
    is closed unless ``close`` is false, and ``on_success`` / ``on_complete`` are enqueued
    exactly once when every member ended."""

    jobs: Annotated[list[EnqueueBody], msgspec.Meta(max_length=MAX_BATCH)]
    batch: JobId | None = None
    on_success: EnqueueBody | None = None
    on_complete: EnqueueBody | None = None
    close: bool = True


class BatchAnswer(msgspec.Struct):
    """One result per job, in the order sent; for a batch with callbacks (``batch`` given),
    its progress instead (``results`` empty)."""

    results: list[EnqueueResult]
    batch: BatchInfo | None = None


class ChainBody(msgspec.Struct, forbid_unknown_fields=True):
    """Jobs that run one after the other, each once the one before has succeeded."""

    jobs: Annotated[list[EnqueueBody], msgspec.Meta(min_length=1, max_length=MAX_BATCH)]
    on_parent_failure: Literal["dead", "run"] = "dead"


class RescheduleBody(msgspec.Struct, forbid_unknown_fields=True):
    """The new due time: after ``delay`` or ``at`` a time (neither: now)."""

    delay: Seconds | None = None
    at: AtTime | None = None


class Done(msgspec.Struct):
    """The job was found and the change made."""

    id: str
    done: bool = True


class JobsAnswer(msgspec.Struct):
    """One page of jobs; pass ``cursor`` for the next (null: the end)."""

    jobs: list[JobInfo]
    cursor: str | None


class DeadAnswer(msgspec.Struct):
    """The oldest dead-letter entries."""

    jobs: list[DeadJob]


class DeadReplayBody(msgspec.Struct, forbid_unknown_fields=True):
    """Which dead jobs to put back (all by default), due after ``delay`` (else now)."""

    topic: Topic | None = None
    id: JobId | None = None
    delay: Seconds | None = None


class DeadPurgeBody(msgspec.Struct, forbid_unknown_fields=True):
    """Which dead jobs to forget (all by default)."""

    topic: Topic | None = None
    id: JobId | None = None


class Count(msgspec.Struct):
    """How many jobs the operation touched."""

    count: int


class PauseAnswer(msgspec.Struct):
    """The topic's state now; ``changed`` is false when it was so already."""

    topic: str
    paused: bool
    changed: bool


class ReserveBody(msgspec.Struct, forbid_unknown_fields=True):
    """Take up to ``count`` jobs as ``consumer`` of ``group``, waiting up to ``wait_ms``."""

    group: Group = "workers"
    consumer: Consumer | None = None
    wait_ms: Annotated[int, msgspec.Meta(ge=0, le=30_000)] = 0
    count: Annotated[int, msgspec.Meta(ge=1, le=100)] = 1


class Delivery(msgspec.Struct):
    """One reserved job: settle it by ``receipt`` within ``ttr`` seconds (or touch it).
    `last_checkpoint`: what an earlier attempt of the job kept with a touch's or fail's
    `checkpoint` (null: none)."""

    id: str
    topic: str
    body: Any
    headers: dict[str, str]
    attempt: int
    due: int
    ttr: float
    receipt: str
    last_checkpoint: Any  # always sent (null: none), so a generated client's shape is closed


class ReserveAnswer(msgspec.Struct):
    """The jobs taken."""

    deliveries: list[Delivery]


class FailBody(msgspec.Struct, forbid_unknown_fields=True):
    """Why the attempt failed; retry after ``retry_delay`` (else the job's backoff) or send it
    to the dead letters with ``dead``; or `snooze`: back after that many seconds, no attempt
    spent. `checkpoint` (at most 64 KiB of JSON): what the job's next attempt reads as
    `last_checkpoint`."""

    error: Annotated[str, msgspec.Meta(max_length=65536)]
    retry_delay: Seconds | None = None
    dead: bool = False
    # back after this many seconds without spending an attempt (docs/worker.md#snooze)
    snooze: Seconds | None = None
    # kept for the job's next attempt, at most 64 KiB of JSON (docs/worker.md#checkpoints)
    checkpoint: Any = None


class AckBody(msgspec.Struct, forbid_unknown_fields=True):
    """The job is done. `result`, any JSON value, is kept as the job's result for the job's
    `keep_result` seconds, for `GET .../jobs/{id}/result`."""

    result: Any = None


class TouchBody(msgspec.Struct, forbid_unknown_fields=True):
    """A heartbeat. `progress` (a number or a small JSON value, at most 1 KiB) is shown by
    the job's routes while it runs; `checkpoint` (at most 64 KiB of JSON) is what the job's
    next attempt reads as `last_checkpoint`. A job aborted meanwhile
    answers 409 `aborted`."""

    progress: Any = None
    checkpoint: Any = None


class Settled(msgspec.Struct):
    """What became of the delivery."""

    outcome: Literal["acked", "retried", "dead", "touched", "snoozed"]


def seconds_of(value: float | str | None, field: str) -> float | None:
    """A number of seconds, or a duration string parsed as the CLI does."""
    if isinstance(value, str):
        return parse_duration(value, field=field)
    return value


def at_of(value: float | str | None) -> datetime | float | None:
    """Epoch seconds, or an ISO 8601 time (``Z`` allowed; a naive one is refused later)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z"))
                                      else text)
    except ValueError:
        raise ValidationError(f"at: {value[:80]!r} is not epoch seconds or an ISO 8601 time "
                              f"(example: 2030-01-31T09:30:00Z)", field="at") from None


def backoff_of(value: list[float] | BackoffBody | None) -> BackoffPolicy | None:
    """The library's backoff policy."""
    if isinstance(value, BackoffBody):
        return Backoff(base=value.base, cap=value.cap, jitter=value.jitter)
    return value


def job_values(job: EnqueueBody) -> tuple[Any, ...]:
    """The ``JobSpec`` fields of one request job, in their order (``JobSpec(*values)``, or
    ``prepare_values(cfg, *values)`` without building the spec)."""
    delay, at, ttr, backoff = job.delay, job.at, job.ttr, job.backoff
    # the common values need no conversion
    return (job.topic, job.body,
            parse_duration(delay, field="delay") if isinstance(delay, str) else delay,
            None if at is None else at_of(at), job.id,
            parse_duration(ttr, field="ttr") if isinstance(ttr, str) else ttr,
            job.max_attempts, None if backoff is None else backoff_of(backoff),
            job.headers, job.replace, None,
            parse_duration(job.keep_result, field="keep_result")
            if isinstance(job.keep_result, str) else job.keep_result,
            job.priority, job.key,
            parse_duration(job.expires, field="expires")
            if isinstance(job.expires, str) else job.expires,
            parse_duration(job.keep_done, field="keep_done")
            if isinstance(job.keep_done, str) else job.keep_done)


def to_spec(job: EnqueueBody) -> JobSpec:
    """The ``JobSpec`` of one request job."""
    return JobSpec(*job_values(job))
