"""The sans-I/O core of the producer API: validation, argument packing and reply parsing.

Each operation is a generator *plan*: it yields script calls (or a list of them, sent as one
pipeline) and receives the replies. ``Queue`` and ``AsyncQueue`` drive the same plans, so the
sync and async faces never copy logic. The enqueue part lives in ``enqueuing.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TypeVar

from ..base import validation
from ..base.errors import StreamdelayError, ValidationError
from ..base.models import (
    At,
    DeadJob,
    Delay,
    JobInfo,
    QueueStats,
    TopicStats,
)
from ..limits.keyed import backlog_plan
from ..limits.limit_plans import limits_plan, running_plan
from ..protocol import streams
from ..protocol.codec import Blob, decode_blob, decode_body, parse_record
from ..protocol.deliveries import entry_ms
from ..protocol.keys import PartitionKeys, partition_keys, partition_of
from ..protocol.plan import Command, Plan, Step
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import (
    STATE_NAMES,
    JobReply,
    field_map,
    parse_job,
    parse_reschedule,
    parse_stats,
    texts,
)
from ..protocol.result_codec import parse_progress, progress_key
from ..protocol.scripts import Arg, script
from .enqueuing import when_args
from .flow_plans import relations_plan, waiting_plan
from .job_options import parse_options
from .pause_plans import paused_plan

SCAN_BATCH = 200
T = TypeVar("T")


def validated(plan: Plan[T]) -> Plan[T]:
    """Run ``plan`` up to its first Redis step now, so bad input is refused before any I/O.

    The returned plan yields that first step and then the rest of ``plan`` unchanged.
    """
    try:
        first = next(plan)
    except StopIteration as done:
        return _finished(done.value)
    return _resumed(first, plan)


def _finished(value: T) -> Plan[T]:
    return value
    yield  # a generator that does no step


def _resumed(first: Step, plan: Plan[T]) -> Plan[T]:
    step = first
    while True:
        try:
            reply = yield step
        except StreamdelayError as exc:  # a step's refusal goes on to the plan (runner.py)
            try:
                step = plan.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            continue
        try:
            step = plan.send(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def _keys_for(cfg: QueueSpec, job_id: str) -> PartitionKeys:
    return PartitionKeys(cfg.name, partition_of(validation.job_id(job_id), cfg.partitions))


def cancel_plan(cfg: QueueSpec, job_id: str) -> Plan[bool]:
    """Cancel one job in any state."""
    keys = _keys_for(cfg, job_id)
    keep_ms = validation.delay_ms(cfg.keep_result, "keep_result")  # docs/results.md
    reply = yield script("cancelJob").call(keys.script_keys(), [job_id, keep_ms],
                                             durable=True)
    return bool(int(reply))


def reschedule_plan(
    cfg: QueueSpec, job_id: str, delay: Delay | None, at: At | None
) -> Plan[bool]:
    """Give one job a new due time."""
    keys = _keys_for(cfg, job_id)
    if delay is None and at is None:
        raise ValidationError("delay: give delay or at", field="delay")
    kind, when = when_args(delay, at)
    tolerance = validation.delay_ms(cfg.past_tolerance)
    keep_ms = validation.delay_ms(cfg.keep_result, "keep_result")  # a lost entry's waiters wake
    reply = yield script("rescheduleJob").call(
        keys.script_keys(), [job_id, kind, when, tolerance, keep_ms], durable=True)
    return parse_reschedule(reply).found


def job_info(job_id: str, found: JobReply) -> JobInfo:
    """Turn a parsed ``getJob`` reply into a ``JobInfo``."""
    try:
        if found.substate == "corrupt":
            raise StreamdelayError("the record header does not parse")
        record = parse_record(found.record)
        # an empty blob: a job whose stream entry was lost while its body was kept only there
        # (docs/keys.md#layouts), or a tombstone of such a job: shown without a body
        blob = decode_blob(record.blob) if record.blob else Blob("b", b"")
    except StreamdelayError as exc:  # written by a foreign client: cancel(id) removes it
        raise StreamdelayError(f"id: job {job_id!r} has a malformed record ({exc})",
                               field="id", job_id=job_id) from exc
    try:
        body = decode_body(blob.fmt, blob.body) if record.blob else None
    except (StreamdelayError, RecursionError):  # nested too deep to decode: shown raw
        body = blob.body
    state = found.substate if record.state == "s" else STATE_NAMES.get(record.state, "")
    reserved = state == "reserved"
    return JobInfo(
        id=job_id,
        topic=record.topic,
        state=state,  # type: ignore[arg-type]
        due=record.due,
        created=record.created,
        attempts=record.attempts,
        max_attempts=record.max_attempts,
        ttr=record.ttr_ms / 1000,
        body=body,
        headers=blob.headers,
        consumer=found.owner if reserved else None,
        idle_ms=found.idle_ms if reserved else None,
        deliveries=found.deliveries if reserved else None,
        error=found.error or None,
        ttr_ms=record.ttr_ms,
        # the dead-letter entry's id: written by the script that moved the job there, at the
        # server's time then (docs/keys.md: a dead record's entry)
        died=(entry_ms(record.entry) or None) if record.state == "x" else None,
    )


def with_options(info: JobInfo, opts: object) -> JobInfo:
    """``info`` with the priority, key and deadline of its ``opts`` field (docs/keys.md#job-
    options); unchanged for a job without options."""
    if not opts:
        return info
    found = parse_options(opts)
    return dataclasses.replace(info, priority=found.priority, key=found.key,
                               expires_at=found.deadline_ms)


def get_plan(cfg: QueueSpec, job_id: str) -> Plan[JobInfo | None]:
    """Read one job by id."""
    keys = _keys_for(cfg, job_id)
    reply = yield script("getJob").call(keys.script_keys(), [job_id])
    found = parse_job(reply)
    if found is None:
        return None
    info = with_options(job_info(job_id, found), reply[7] if len(reply) > 7 else None)
    parents, children = yield from relations_plan(cfg, job_id)  # docs/workflows.md
    if parents or children:
        info = dataclasses.replace(info, parents=parents or None, children=children or None)
    if info.state != "reserved":
        return info
    # a running job: the progress its handler reported (a second round trip for those only)
    raw = yield Command(("GET", progress_key(keys, job_id)))
    value = parse_progress(raw, parse_record(found.record).entry)
    return info if value is None else dataclasses.replace(info, progress=value)


def stats_plan(cfg: QueueSpec) -> Plan[QueueStats]:
    """Per-topic counts summed over partitions."""
    calls = [script("readStats").call(k.script_keys(), []) for k in
             partition_keys(cfg.name, cfg.partitions)]
    raw = [(yield calls[0])] if len(calls) == 1 else (yield calls)
    replies = [parse_stats(reply) for reply in raw]
    now = max(reply.now_ms for reply in replies)
    topics: dict[str, TopicStats] = {}
    for reply in replies:
        for row in reply.rows:
            name = row.topic
            delayed, reserved, dead, oldest = row.delayed, row.reserved, row.dead, row.oldest_due_ms
            lag = now - oldest if oldest >= 0 else 0
            if reply.head_topic == name and 0 <= reply.head_due_ms < now:
                lag = max(lag, now - reply.head_due_ms)
            previous = topics.get(name)
            row_stats = TopicStats(name, delayed, row.in_stream - reserved, reserved, dead,
                                   max(lag, 0), row.group or None)
            if previous is not None:
                row_stats = TopicStats(
                    name, previous.delayed + delayed, previous.ready + row_stats.ready,
                    previous.reserved + reserved, previous.dead + dead,
                    max(previous.lag_ms, row_stats.lag_ms), previous.group or row_stats.group,
                )
            topics[name] = row_stats
    for name, waiting in (yield from waiting_plan(cfg)).items():  # docs/workflows.md
        known = topics.get(name) or TopicStats(name, 0, 0, 0, 0, 0, None)
        topics[name] = dataclasses.replace(known, waiting=waiting)
    for name in (yield from paused_plan(cfg)):  # paused topics are marked, known or not yet
        known = topics.get(name) or TopicStats(name, 0, 0, 0, 0, 0, None)
        topics[name] = dataclasses.replace(known, paused=True)
    limits = yield from limits_plan(cfg)  # limited topics are shown, known or not yet
    held = yield from running_plan(cfg, sorted(t for t, v in limits.items() if v.concurrency))
    for name, limit in limits.items():
        known = topics.get(name) or TopicStats(name, 0, 0, 0, 0, 0, None)
        topics[name] = dataclasses.replace(
            known, rate=None if limit.rate is None else str(limit.rate),
            concurrency=limit.concurrency, leases=held.get(name, 0),
            key_rate=None if limit.key_rate is None else str(limit.key_rate),
            key_concurrency=limit.key_concurrency)
    staged, backlog = yield from backlog_plan(cfg)  # docs/priorities.md: ready in lanes
    for name in staged | backlog.keys():
        known = topics.get(name) or TopicStats(name, 0, 0, 0, 0, 0, None)
        found = backlog.get(name)
        topics[name] = dataclasses.replace(
            known, staged=name in staged, ready=known.ready + (found.ready if found else 0),
            keys=found.keys if found else ())
    return QueueStats(cfg.name, now, dict(sorted(topics.items())))


def _topics_plan(cfg: QueueSpec, keys: PartitionKeys, topic: str | None) -> Plan[list[str]]:
    if topic is not None:
        return [validation.topic(topic)]
    names = yield Command(("HKEYS", keys.counts))
    return sorted(texts(names))


def dead_list_plan(cfg: QueueSpec, topic: str | None, limit: int) -> Plan[list[DeadJob]]:
    """The oldest dead-letter entries (at most ``limit``), of one topic or all."""
    validation.positive_int(limit, "limit")
    found: list[DeadJob] = []
    for keys in partition_keys(cfg.name, cfg.partitions):
        for name in (yield from _topics_plan(cfg, keys, topic)):
            entries = yield streams.entries_range(keys.dead(name), count=limit)
            for entry_id, flat in streams.entries(entries):
                f = field_map(flat)
                # when it died: its entry's time, as JobInfo.died reads it (the script's
                # ``at`` field can be a millisecond earlier than the XADD's id)
                found.append(DeadJob(f.get("id", ""), name, f.get("error", ""),
                                     int(f.get("attempts", 0)),
                                     entry_ms(entry_id) or int(f.get("at", 0)),
                                     entry_id))
    found.sort(key=lambda d: d.at)
    return found[:limit]


def _dead_batch_plan(
    cfg: QueueSpec, name: str, topic: str | None, job_id: str | None, extra: list[Arg],
    tail: tuple[Arg, ...] = ()
) -> Plan[int]:
    if job_id is not None:
        validation.job_id(job_id)
        all_keys: Iterable[PartitionKeys] = [_keys_for(cfg, job_id)]
    else:
        all_keys = partition_keys(cfg.name, cfg.partitions)
    total = 0
    for keys in all_keys:
        for topic_name in (yield from _topics_plan(cfg, keys, topic)):
            while True:
                args: list[Arg] = [topic_name, SCAN_BATCH, *extra, job_id or "", *tail]
                done = yield script(name).call(keys.script_keys(), args, durable=True)
                total += len(done)
                if job_id is not None or not done:
                    break
    return total


def dead_replay_plan(
    cfg: QueueSpec, topic: str | None, job_id: str | None, delay: Delay | None
) -> Plan[int]:
    """Put dead jobs back (attempts reset, due after ``delay``); returns how many."""
    delay_ms = validation.delay_ms(0 if delay is None else delay)
    # the partition count: a replayed child finds its parents' partitions (docs/workflows.md)
    return (yield from _dead_batch_plan(cfg, "replayDead", topic, job_id, [delay_ms],
                                        (cfg.partitions,)))


def dead_purge_plan(cfg: QueueSpec, topic: str | None, job_id: str | None) -> Plan[int]:
    """Forget dead jobs; returns how many."""
    return (yield from _dead_batch_plan(cfg, "purgeDead", topic, job_id, []))
