"""One delivery of a job, I/O-free: decoding a stream entry, and the script calls that settle,
heartbeat or hand back deliveries. The consumer plans (``consume/core/``) build on them; both
drivers, the Worker and the Reservation, run those (docs/pull.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..base.control import decode_checkpoint
from ..base.errors import BodyDecodeError, StreamdelayError
from ..base.models import BackoffPolicy, Job
from .codec import blob_backoff, decode_blob, decode_body, parse_record
from .keys import PartitionKeys
from .scripts import Arg, ScriptCall, script

ERROR_TEXT_LIMIT = 2000  # characters of an error kept with a retried or dead job
EXPIRED = "expired"  # the error of a job whose deadline passed before it ran (docs/expiry.md)


class OpenedEntry(NamedTuple):
    """A stream entry decoded: the job and its own backoff, or why it can never run (``error``:
    the entry is dead-lettered). ``job_id`` is known as soon as the envelope had one. A named
    tuple: one is built per delivery."""

    job_id: str
    job: Job | None
    backoff: BackoffPolicy | None
    error: str
    ttr_ms: int = 60_000
    size: int = 0  # bytes of the job record
    expired: bool = False  # its deadline passed: settled by ``expire_call``, never run


def entry_ms(entry_id: str) -> int:
    """The server time (epoch ms) a stream entry id was written at."""
    head = entry_id.partition("-")[0]
    return int(head) if head.isdigit() else 0


def deadline_passed(fields: dict[Any, Any], entry_id: str, now_ms: int) -> bool:
    """Whether the entry carries a deadline (field ``x``, written by ``promoteDue``: epoch ms)
    that ``now_ms`` (the server clock read in the same round trip as the read; 0: unknown) has
    reached. The entry's own id is a lower bound of the server clock (a clock read on another
    node of a cluster may be older than a read that blocked)."""
    raw = fields.get(b"x")
    if raw is None:
        return False
    try:
        deadline = int(raw)
    except ValueError:
        return False
    return max(now_ms, entry_ms(entry_id)) >= deadline


def open_entry(
    fields: dict[Any, Any] | None, topic: str, entry_id: str, partition: int,
    body_type: Any = None, max_body_bytes: int | None = None, now_ms: int = 0,
) -> OpenedEntry:
    """Decode the fields of a topic stream entry into a ``Job``.

    A body over ``max_body_bytes`` (written by a foreign producer) gives an error, never a job,
    and so does one nested too deeply to decode (``RecursionError``): no retry can decode it.
    A job whose deadline ``now_ms`` (the server clock of the read) has reached is not decoded:
    ``expired`` (docs/expiry.md).
    """
    if not fields or b"id" not in fields:
        return OpenedEntry("", None, None, "envelope: stream entry without a job id")
    raw_id = bytes(fields[b"id"])
    job_id = raw_id.decode(errors="replace")
    if not raw_id or job_id.encode() != raw_id:  # no producer writes such an id
        return OpenedEntry(job_id, None, None, "envelope: job id is empty or not UTF-8")
    if b"x" in fields and deadline_passed(fields, entry_id, now_ms):
        return OpenedEntry(job_id, None, None, EXPIRED, expired=True)
    ttr_ms, size = 60_000, 0
    try:
        raw_record = fields.get(b"rec", b"")
        record = parse_record(raw_record)
        ttr_ms, size = record.ttr_ms, len(raw_record)
        blob = decode_blob(record.blob)
        if max_body_bytes is not None and len(blob.body) > max_body_bytes:
            raise BodyDecodeError(f"body: {len(blob.body)} bytes is over the limit of "
                                  f"{max_body_bytes}")
        body = decode_body(blob.fmt, blob.body, body_type)
    except StreamdelayError as exc:
        return OpenedEntry(job_id, None, None, f"{type(exc).__name__}: {exc}", ttr_ms, size)
    except RecursionError as exc:
        return OpenedEntry(job_id, None, None, f"BodyDecodeError: body: nested too deeply to "
                                               f"decode (RecursionError: {exc})", ttr_ms, size)
    job = Job(
        id=job_id, topic=topic, body=body, due=record.due, created=record.created,
        attempt=record.attempts + 1, max_attempts=record.max_attempts, ttr=record.ttr_ms / 1000,
        headers=blob.headers, entry_id=entry_id, partition=partition,
        keep_result_ms=blob.keep or 0, keep_done_ms=blob.done,
    )
    if b"c" in fields:  # an earlier run's checkpoint (docs/worker.md#checkpoints)
        object.__setattr__(job, "last_checkpoint", decode_checkpoint(fields[b"c"]))
    return OpenedEntry(job_id, job, blob_backoff(blob), "", ttr_ms, size)


def fail_call(keys: PartitionKeys, group: str, topic: str, job_id: str, entry_id: str,
              delay_ms: int, dead: bool, error: str, keep_result_ms: int = 0) -> ScriptCall:
    """``failJob``: retry the delivery after ``delay_ms``, or dead-letter it (``dead`` or its
    last attempt; then its result, the error, is kept ``keep_result_ms``); the reply is read
    by ``replies.parse_fail`` (outcome 0: stale delivery)."""
    args: list[Arg] = [group, topic, job_id, entry_id, delay_ms, "1" if dead else "0",
                       error[:ERROR_TEXT_LIMIT], keep_result_ms]
    return script("failJob").call(keys.script_keys(), args)


def ack_call(keys: PartitionKeys, group: str, keep_done_ms: int, flat: Sequence[str],
             results: Sequence[Arg] = (), reads: Sequence[int] = ()) -> ScriptCall:
    """``ackJobs`` for ``topic, job id, entry id`` triples of one partition, then ``position
    (1-based), keep_result ms, encoded result`` triples of the results to keep
    (``results.encode_result``); the reply is how many were still current. ``reads``: one
    per delivery, the server clock when it was read fresh with no heartbeat since (0: not
    known), which dates its ``started`` event without a pending-list read
    (docs/events.md#started); empty: none given (the plain call, ``R = 0``). The script takes
    them as runs (``read_runs``)."""
    return script("ackJobs").call(keys.script_keys(), [
        group, keep_done_ms, len(flat) // 3, *flat, *(read_runs(reads) if reads else (0,)),
        *results])


def read_runs(reads: Sequence[int]) -> list[int]:
    """``reads`` (one read time per delivery) as ``ackJobs`` takes them: R, then R pairs
    (count, time) of equal times in a row; the deliveries of one read share its time, so a
    batch is a few runs, and the script parses one number per run, not per delivery."""
    pairs: list[int] = []
    for ms in reads:
        if pairs and pairs[-1] == ms:
            pairs[-2] += 1
        else:
            pairs += (1, ms)
    return [len(pairs) // 2, *pairs]


def touch_call(keys: PartitionKeys, group: str, consumer: str, flat: Sequence[str],
               progress: Sequence[Arg] = ()) -> ScriptCall:
    """``touchJobs`` (heartbeat) for ``topic, entry id`` pairs of ``consumer``, with ``position
    (1-based), job id, ttl ms, JSON value`` of the progress to store (docs/results.md#progress);
    the reply is the entry ids it no longer owns."""
    return script("touchJobs").call(keys.script_keys(),
                                      [group, consumer, len(flat) // 2, *flat, *progress])


def expire_call(keys: PartitionKeys, group: str, flat: Sequence[str]) -> ScriptCall:
    """``expireJobs``: dead-letter ``topic, job id, entry id`` triples whose job's deadline has
    passed (checked again on the script's clock); the reply is one outcome per delivery, 2
    expired, 1 handed back (not expired after all), 0 stale (``settling.expire_plan``)."""
    return script("expireJobs").call(keys.script_keys(), [group, *flat])


def release_call(keys: PartitionKeys, group: str, flat: Sequence[str], later_ms: int = 0
                 ) -> ScriptCall:
    """``releaseJobs``: hand ``topic, job id, entry id`` triples back to the tail of their
    streams at once, not counted as an attempt; with ``later_ms``, ``releaseJobsLater``: to the
    delayed set, due that long from now (a worker process whose def handler threads outlived
    its shutdown). The reply is how many were still current."""
    if later_ms:
        return script("releaseJobsLater").call(keys.script_keys(), [group, later_ms, *flat])
    return script("releaseJobs").call(keys.script_keys(), [group, *flat])
