"""The sans-I/O core of enqueueing: validation, cutting into bounded ``enqueueJobs`` calls (their
arguments packed and their replies read in ``enqueue_calls.py``) and the round logic.

``enqueue_plan`` (``Queue``, ``AsyncQueue.enqueue_many``) and the coalescing of concurrent
``AsyncQueue.enqueue`` calls (``coalesce.py``) both build their calls and read their replies here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from ..base import validation
from ..base.errors import NotDurable, PartialEnqueueError, StreamdelayError, ValidationError
from ..base.models import At, Backoff, BackoffPolicy, Delay, EnqueueResult, JobSpec
from ..protocol.batching import partition_batches
from ..protocol.codec import encode_blob, encode_body
from ..protocol.keys import partition_of
from ..protocol.plan import Command, EachCall, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.script_errors import error_from_script
from ..protocol.scripts import Arg
from ..telemetry.tracing import with_trace_context

# PreparedJob, Outcome: defined with the calls that carry them, named here for every caller
from .enqueue_calls import EnqueueChunk, Split, enqueue_chunks, fill_results, staged_marks
from .enqueue_calls import Outcome as Outcome
from .enqueue_calls import PreparedJob as PreparedJob
from .job_options import job_options, new_job_id

# One enqueueJobs call must not block Redis for more than ~1 ms (docs/keys.md#batch-sizes): 240
# small jobs took 1.3 ms (SLOWLOG median, quiet run of 2026-11-23), so 160 (~0.9 ms); a bigger
# enqueue_many still goes out in one round trip (a pipeline of bounded calls). Big bodies bound
# a call by bytes too: at most ENQUEUE_BYTES of job data, yet always at least one job
# (docs/producer.md#enqueue_many).
ENQUEUE_BATCH = 160
ENQUEUE_BYTES = 1 << 20
PAST_CHECK_SLACK_MS = 60_000  # see round_plan
_PLAIN_ID = validation.JOB_ID.fullmatch  # prepare_values: a plain id checked in one call
_MAX_AT, _MAX_DELAY = 1e11, validation.MAX_DELAY_SECONDS  # as at_ms and delay_ms bound them


def when_args(delay: Delay | None, at: At | None) -> tuple[str, int]:
    """``('r', ms)`` for a relative delay or ``('a', epoch_ms)`` for an absolute time."""
    if delay is not None and at is not None:
        raise ValidationError("delay: give either delay or at, not both", field="delay")
    if at is not None:
        return "a", validation.at_ms(at)
    return "r", validation.delay_ms(0 if delay is None else delay)


@lru_cache(maxsize=64)
def _default_ttr_ms(ttr: Any) -> int:
    """A queue's default ttr in ms, validated once per value (the config's is hashable)."""
    return validation.ttr_ms(ttr)


@lru_cache(maxsize=64)
def _default_keep_ms(keep: float) -> int:
    """A queue's default keep_result in ms, once per value."""
    return validation.delay_ms(keep, "keep_result")


@lru_cache(maxsize=64, typed=True)  # typed: True is not 1
def _default_attempts(attempts: Any) -> int:
    """A queue's default max_attempts, validated once per value."""
    return validation.max_attempts(attempts)


def replace_arg(replace: bool, max_wait: Delay | None) -> str:
    """The ``replace`` value of ``enqueueJobs``: ``'0'``, ``'1'``, or with ``max_wait``
    ``'1:<ms>'`` (debounce, docs/producer.md#debounce)."""
    if max_wait is None:
        return "1" if replace else "0"
    if replace is not True:
        raise ValidationError("max_wait: only with replace=True (it bounds how far replacing "
                              "moves the due time)", field="max_wait")
    return f"1:{validation.delay_ms(max_wait, 'max_wait')}"


def prepare_job(cfg: QueueSpec, spec: JobSpec) -> PreparedJob:
    """Validate one job and pack its eight ``enqueueJobs`` values."""
    return prepare_values(cfg, spec.topic, spec.body, spec.delay, spec.at, spec.id, spec.ttr,
                          spec.max_attempts, spec.backoff, spec.headers, spec.replace,
                          spec.max_wait, spec.keep_result, spec.priority, spec.key,
                          spec.expires, spec.keep_done)


def prepare_values(
    cfg: QueueSpec, topic: Any, body: Any, delay: Delay | None, at: At | None,
    id: str | None, ttr: Delay | None, max_attempts: int | None,
    backoff: BackoffPolicy | None, headers: dict[str, str] | None, replace: bool,
    max_wait: Delay | None, keep_result: Delay | None = None,
    priority: int | None = None, key: str | None = None, expires: Delay | None = None,
    keep_done: Delay | None = None,
) -> PreparedJob:
    """``prepare_job`` of the fields of a ``JobSpec`` given one by one: the one validation of
    every enqueue path, without building a frozen ``JobSpec`` per job (~1.5 µs) where the
    caller has the values already (``enqueue``, the HTTP batch route)."""
    topic = validation.topic(topic)
    opts = ""
    if priority is None and key is None and expires is None:  # the plain job: no options
        if id is None:
            job_id = new_job_id()
        elif type(id) is str and "@" not in id and _PLAIN_ID(id):
            job_id = id  # what producer_job_id returns for it (no '{' either: not in JOB_ID)
        else:
            job_id = validation.producer_job_id(id)
    else:
        job_id, opts = job_options(id, priority, key, expires)
    if delay is None and (type(at) is float or type(at) is int) and 0 <= at <= _MAX_AT:
        kind, when = "a", math.ceil(at * 1000)  # epoch seconds, as at_ms reads them
    elif at is None and (type(delay) is float or type(delay) is int) and 0 <= delay <= _MAX_DELAY:
        kind, when = "r", math.ceil(delay * 1000)  # seconds, as delay_ms reads them
    else:
        kind, when = when_args(delay, at)
    if (ttr is None and max_attempts is None and backoff is None and headers is None
            and keep_result is None and keep_done is None and replace is False
            and max_wait is None and not opts):
        # the plain job (the queue's defaults, nothing else to check): its values straight
        # away, as the general path below makes them, the common case of every enqueue path
        fmt, data = encode_body(body, cfg.serializer, cfg.max_body_bytes)
        traced = with_trace_context(None)  # docs/operations.md#tracing
        blob = encode_blob(fmt, data, {} if traced is None else validation.headers(traced),
                           None, _default_keep_ms(cfg.keep_result))
        return PreparedJob(
            job_id, partition_of(job_id, cfg.partitions),
            (job_id, topic, kind, when, _default_ttr_ms(cfg.ttr),
             _default_attempts(cfg.max_attempts), "0", blob),
            len(blob) + len(job_id) + len(topic) + 40)  # 40: numbers and flags
    ttr_ms = _default_ttr_ms(cfg.ttr) if ttr is None else validation.ttr_ms(ttr)
    attempts = (_default_attempts(cfg.max_attempts) if max_attempts is None
                else validation.max_attempts(max_attempts))
    if backoff is not None and not isinstance(backoff, Backoff):
        backoff = validation.backoff_schedule(backoff)
    fmt, data = encode_body(body, cfg.serializer, cfg.max_body_bytes)
    checked = validation.headers(with_trace_context(headers))  # docs/operations.md#tracing
    keep_ms = (_default_keep_ms(cfg.keep_result) if keep_result is None
               else validation.delay_ms(keep_result, "keep_result"))
    done_ms = None if keep_done is None else validation.delay_ms(keep_done, "keep_done")
    blob = encode_blob(fmt, data, checked, backoff, keep_ms, done_ms)
    if not isinstance(replace, bool):
        raise ValidationError("replace: must be a bool", field="replace")
    args: tuple[Arg, ...] = (
        job_id, topic, kind, when, ttr_ms, attempts, replace_arg(replace, max_wait), blob,
    )
    size = len(blob) + len(job_id) + len(topic) + len(opts) + 40  # 40: numbers and flags
    return PreparedJob(job_id, partition_of(job_id, cfg.partitions), args, size, opts)


def is_absolute(job: PreparedJob) -> bool:
    """True when the job's due time is an absolute ``at`` (only those can be in the past)."""
    return job.when_kind == "a"


def past_due(
    prepared: Sequence[PreparedJob], indexes: Iterable[int], time_reply: Any, tolerance: int
) -> list[int]:
    """Of ``indexes``, the jobs whose ``at`` is further in the past than ``tolerance`` ms, by the
    server clock in ``time_reply`` (a ``TIME`` reply)."""
    seconds, micros = time_reply
    now = int(seconds) * 1000 + int(micros) // 1000
    return [i for i in indexes
            if is_absolute(prepared[i]) and prepared[i].when_ms < now - tolerance]


def at_in_past(job: PreparedJob) -> StreamdelayError:
    """The error of a job whose ``at`` is too far in the past (as the script reports it)."""
    return error_from_script("enqueueJobs", f"SDERR AT_IN_PAST {job.id}")


def refused_job(
    prepared: Sequence[PreparedJob], indexes: Sequence[int], error: Exception
) -> int | None:
    """The job an ``AT_IN_PAST`` refusal of one ``enqueueJobs`` call (nothing written) was about.

    Of ``indexes``, the absolute-time job with the refused id and the earliest ``at`` (when an id
    repeats, that one is in the past if any is); None when ``error`` is no such refusal.
    """
    if not isinstance(error, ValidationError) or error.field != "at" or error.job_id is None:
        return None
    named = [i for i in indexes if prepared[i].id == error.job_id and is_absolute(prepared[i])]
    return min(named, key=lambda i: prepared[i].when_ms) if named else None




def split_jobs(prepared: Sequence[PreparedJob], indexes: Iterable[int] | None = None) -> Split:
    """The jobs of each ``enqueueJobs`` call, as (partition, indexes into ``prepared``):
    partitions in ascending order, the jobs' order kept within a partition, at most
    ``ENQUEUE_BATCH`` jobs and ``ENQUEUE_BYTES`` of job data per call (but never no job)."""
    chosen = list(range(len(prepared)) if indexes is None else indexes)
    if not chosen:
        return []
    first = prepared[chosen[0]].partition
    if (all(prepared[i].partition == first for i in chosen)
            and max(prepared[i].size for i in chosen) * ENQUEUE_BATCH <= ENQUEUE_BYTES):
        # the common case (one partition, small jobs): slices by count alone, the same cut
        # partition_batches makes, without its per-job grouping and weighing (~0.3 µs a job)
        return [(first, chosen[start:start + ENQUEUE_BATCH])
                for start in range(0, len(chosen), ENQUEUE_BATCH)]
    return list(partition_batches(
        chosen, lambda index: prepared[index].partition, ENQUEUE_BATCH,
        lambda index: prepared[index].size, ENQUEUE_BYTES))


def settle_chunks(
    jobs: Sequence[PreparedJob], chunks: Sequence[EnqueueChunk], replies: Sequence[Any],
    outcomes: list[Outcome | None], isolate: bool,
) -> list[int]:
    """Fill the outcomes of each chunk's jobs from its reply; the jobs to send again (those
    that rode with a job whose ``at`` was refused, with ``isolate``)."""
    again: list[int] = []
    for chunk, reply in zip(chunks, replies, strict=True):
        refused = (refused_job(jobs, chunk.owners, reply)
                   if isolate and isinstance(reply, Exception) else None)
        if refused is not None:  # that call wrote nothing: the others go again
            outcomes[refused] = reply
            again.extend(i for i in chunk.owners if i != refused)
        elif isinstance(reply, NotDurable) and isolate:  # each caller: its own job
            for index in chunk.owners:
                outcomes[index] = not_durable_for(reply, [jobs[index].id])
        elif isinstance(reply, Exception):
            for index in chunk.owners:
                outcomes[index] = reply
        else:
            fill_results(jobs, chunk, reply, outcomes)
    return again


def round_plan(
    cfg: QueueSpec, jobs: Sequence[PreparedJob], outcomes: list[Outcome | None], isolate: bool
) -> Plan[None]:
    """Send ``jobs`` as one round of bounded ``enqueueJobs`` calls (one round trip) and fill
    ``outcomes[i]`` with job ``i``'s result, or the error of the call it rode in.

    The one round logic of ``enqueue_many`` (``isolate=False``) and of the async coalescer
    (``isolate=True``: each job is a caller of its own). Several calls are not one atomic unit,
    so then absolute times are checked first against the server clock (a job too far in the
    past is refused: the whole ``enqueue_many``, or that caller alone) and the scripts get a
    widened tolerance (their own check stays as a backstop). With ``isolate``, a call that
    refused one job's ``at`` wrote nothing, and its other jobs go again without it. Connection
    trouble is the runner's: it retries the round, then raises ``ConnectionFailed``.
    """
    live = list(range(len(jobs)))  # the jobs without an outcome yet
    tolerance = validation.delay_ms(cfg.past_tolerance)
    split = split_jobs(jobs, live)
    if len(split) > 1 and any(is_absolute(jobs[i]) for i in live):
        now = yield Command(("TIME",))
        for index in past_due(jobs, live, now, tolerance):
            if not isolate:
                raise at_in_past(jobs[index])
            outcomes[index] = at_in_past(jobs[index])
            live.remove(index)
        tolerance += PAST_CHECK_SLACK_MS
        split = split_jobs(jobs, live)
    while live:
        chunks = enqueue_chunks(cfg, jobs, tolerance, split)
        marks = staged_marks(cfg, jobs, chunks)
        replies: list[Any]
        if marks:  # sent first, in the same round trip; its refusal stops the plan
            try:
                replies = yield EachCall((*marks, *(chunk.call for chunk in chunks)))
            except NotDurable as exc:
                replies = [None, *[exc] * len(chunks)]
            if isinstance(replies[0], Exception):
                raise replies[0]
            replies = replies[1:]
        elif len(chunks) == 1:  # one call: atomic
            try:
                replies = [(yield chunks[0].call)]
            except StreamdelayError as exc:  # the runner raises a call's refusal here
                replies = [exc]
        else:
            try:
                replies = yield EachCall(tuple(chunk.call for chunk in chunks))
            except NotDurable as exc:  # written, not confirmed: every job of the round
                replies = [exc] * len(chunks)
        live = settle_chunks(jobs, chunks, replies, outcomes, isolate)
        live.sort()  # arrival order
        split = split_jobs(jobs, live)


def not_durable_for(error: NotDurable, job_ids: Sequence[str]) -> NotDurable:
    """``error`` naming the jobs it is about (their ids, generated ones too: enqueueing them
    again with ``id=`` is safe)."""
    shown = ", ".join(job_ids[:5]) + (f" and {len(job_ids) - 5} more" if len(job_ids) > 5 else "")
    return NotDurable(f"{error} [jobs: {shown}]", acked=error.acked, replicas=error.replicas,
                      job_ids=tuple(job_ids), script=error.script,
                      job_id=job_ids[0] if len(job_ids) == 1 else None)


def enqueue_plan(cfg: QueueSpec, specs: Iterable[JobSpec]) -> Plan[list[EnqueueResult]]:
    """Enqueue jobs: bounded script calls per partition, all sent in one round trip."""
    if isinstance(specs, JobSpec) or not isinstance(specs, Iterable):
        raise ValidationError("specs: pass a list of JobSpec", field="specs")
    prepared: list[PreparedJob] = []
    for spec in specs:
        if not isinstance(spec, JobSpec):
            raise ValidationError(f"specs: expected JobSpec, got {type(spec).__name__}",
                                  field="specs")
        prepared.append(prepare_job(cfg, spec))
    return (yield from enqueue_prepared_plan(cfg, prepared))


def enqueue_prepared_plan(cfg: QueueSpec, prepared: Sequence[PreparedJob]
                          ) -> Plan[list[EnqueueResult]]:
    """``enqueue_plan`` of jobs ``prepare_job`` / ``prepare_values`` validated already."""
    found: list[Outcome | None] = [None] * len(prepared)
    yield from round_plan(cfg, prepared, found, isolate=False)
    if all(type(o) is EnqueueResult for o in found):  # the common end: one pass
        return found  # type: ignore[return-value]  # every one an EnqueueResult
    outcomes = [o for o in found if o is not None]
    failed = [o for o in outcomes if isinstance(o, Exception)]
    if not failed:
        return [o for o in outcomes if isinstance(o, EnqueueResult)]
    unconfirmed = [o for o in failed if isinstance(o, NotDurable)]
    if len(unconfirmed) == len(failed):  # all written, some not confirmed by the replicas
        raise not_durable_for(unconfirmed[0], [prepared[i].id for i, o in enumerate(outcomes)
                                               if isinstance(o, NotDurable)])
    if len(failed) == len(outcomes):
        raise failed[0]  # every call failed: nothing was written
    raise PartialEnqueueError(outcomes)
