"""The sans-I/O core of the producer API: validation, argument packing and reply parsing.

Each operation is a generator *plan*: it yields script calls (or a list of them, sent as one
pipeline) and receives the replies. ``Queue`` and ``AsyncQueue`` drive the same plans, so the
sync and async faces never copy logic. The enqueue part lives in ``enqueuing.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, TypeVar

from . import validation
from .codec import decode_blob, decode_body, parse_record
from .config import QueueConfig
from .enqueuing import ENQUEUE_BATCH as ENQUEUE_BATCH  # the enqueue core, re-exported
from .enqueuing import enqueue_plan as enqueue_plan
from .enqueuing import when_args
from .errors import GroupNotFound, StreamdelayError, ValidationError
from .inspect.pausing import paused_plan
from .keys import PartitionKeys, partition_keys, partition_of
from .models import (
    At,
    ClaimResult,
    DeadJob,
    Delay,
    JobInfo,
    QueueStats,
    TopicStats,
)
from .runner import Command, Plan, Step
from .scripts import Arg, script

SCAN_BATCH = 200
# Consumers of a group that own nothing and were silent this long are removed by workers (about
# once a minute) and by ``claim`` (which uses its ``min_idle`` instead when given).
PRUNE_IDLE_S = 3600.0
PRUNE_BATCH = 100
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
        reply = yield step
        try:
            step = plan.send(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _keys_for(cfg: QueueConfig, job_id: str) -> PartitionKeys:
    return PartitionKeys(cfg.name, partition_of(validation.job_id(job_id), cfg.partitions))


def cancel_plan(cfg: QueueConfig, job_id: str) -> Plan[bool]:
    """Cancel one job in any state."""
    keys = _keys_for(cfg, job_id)
    reply = yield script("cancelJob").call(keys.script_keys(), [job_id])
    return bool(int(reply))


def reschedule_plan(
    cfg: QueueConfig, job_id: str, delay: Delay | None, at: At | None
) -> Plan[bool]:
    """Give one job a new due time."""
    keys = _keys_for(cfg, job_id)
    if delay is None and at is None:
        raise ValidationError("delay: give delay or at", field="delay")
    kind, when = when_args(delay, at)
    tolerance = validation.delay_ms(cfg.past_tolerance)
    reply = yield script("rescheduleJob").call(keys.script_keys(), [job_id, kind, when, tolerance])
    return bool(int(reply[0]))


def parse_job_info(job_id: str, reply: list[Any]) -> JobInfo:
    """Turn a ``getJob`` reply into a ``JobInfo``."""
    raw, sub, owner, idle, deliveries, error = reply[:6]
    try:
        if _text(sub) == "corrupt":
            raise StreamdelayError("the record header does not parse")
        record = parse_record(raw)
        blob = decode_blob(record.blob)
    except StreamdelayError as exc:  # written by a foreign client: cancel(id) removes it
        raise StreamdelayError(f"id: job {job_id!r} has a malformed record ({exc})",
                               field="id", job_id=job_id) from exc
    try:
        body = decode_body(blob.fmt, blob.body)
    except (StreamdelayError, RecursionError):  # nested too deep to decode: shown raw
        body = blob.body
    state = {"d": "delayed", "x": "dead", "c": "done"}.get(record.state) or _text(sub)
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
        consumer=_text(owner) if reserved else None,
        idle_ms=int(idle) if reserved else None,
        deliveries=int(deliveries) if reserved else None,
        error=_text(error) or None,
        ttr_ms=record.ttr_ms,
    )


def get_plan(cfg: QueueConfig, job_id: str) -> Plan[JobInfo | None]:
    """Read one job by id."""
    keys = _keys_for(cfg, job_id)
    reply = yield script("getJob").call(keys.script_keys(), [job_id])
    return None if reply is None else parse_job_info(job_id, reply)


def stats_plan(cfg: QueueConfig) -> Plan[QueueStats]:
    """Per-topic counts summed over partitions."""
    calls = [script("readStats").call(k.script_keys(), []) for k in
             partition_keys(cfg.name, cfg.partitions)]
    replies = [(yield calls[0])] if len(calls) == 1 else (yield calls)
    now = max(int(reply[0]) for reply in replies)
    topics: dict[str, TopicStats] = {}
    for reply in replies:
        head_due, head_topic = int(reply[1]), _text(reply[2])
        for row in reply[3:]:
            name = _text(row[0])
            delayed, in_stream, reserved, dead, oldest = (int(v) for v in row[1:6])
            lag = now - oldest if oldest >= 0 else 0
            if head_topic == name and 0 <= head_due < now:
                lag = max(lag, now - head_due)
            previous = topics.get(name)
            row_stats = TopicStats(name, delayed, in_stream - reserved, reserved, dead,
                                   max(lag, 0), _text(row[6]) or None)
            if previous is not None:
                row_stats = TopicStats(
                    name, previous.delayed + delayed, previous.ready + row_stats.ready,
                    previous.reserved + reserved, previous.dead + dead,
                    max(previous.lag_ms, row_stats.lag_ms), previous.group or row_stats.group,
                )
            topics[name] = row_stats
    for name in (yield from paused_plan(cfg)):  # paused topics are marked, known or not yet
        row = topics.get(name) or TopicStats(name, 0, 0, 0, 0, 0, None)
        topics[name] = dataclasses.replace(row, paused=True)
    return QueueStats(cfg.name, now, dict(sorted(topics.items())))


def _topics_plan(cfg: QueueConfig, keys: PartitionKeys, topic: str | None) -> Plan[list[str]]:
    if topic is not None:
        return [validation.topic(topic)]
    names = yield Command(("HKEYS", keys.counts))
    return sorted(_text(n) for n in names)


def _fields(reply: Any) -> dict[str, str]:
    """A field map from a reply that redis-py gives as a dict or a flat list."""
    if isinstance(reply, dict):
        return {_text(k): _text(v) for k, v in reply.items()}
    return {_text(reply[i]): _text(reply[i + 1]) for i in range(0, len(reply), 2)}


def dead_list_plan(cfg: QueueConfig, topic: str | None, limit: int) -> Plan[list[DeadJob]]:
    """The oldest dead-letter entries (at most ``limit``), of one topic or all."""
    validation.positive_int(limit, "limit")
    found: list[DeadJob] = []
    for keys in partition_keys(cfg.name, cfg.partitions):
        for name in (yield from _topics_plan(cfg, keys, topic)):
            entries = yield Command(("XRANGE", keys.dead(name), "-", "+", "COUNT", limit))
            for entry_id, flat in entries:
                f = _fields(flat)
                found.append(DeadJob(f.get("id", ""), name, f.get("error", ""),
                                     int(f.get("attempts", 0)), int(f.get("at", 0)),
                                     _text(entry_id)))
    found.sort(key=lambda d: d.at)
    return found[:limit]


def _dead_batch_plan(
    cfg: QueueConfig, name: str, topic: str | None, job_id: str | None, extra: list[Arg]
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
                args: list[Arg] = [topic_name, SCAN_BATCH, *extra, job_id or ""]
                done = yield script(name).call(keys.script_keys(), args)
                total += len(done)
                if job_id is not None or not done:
                    break
    return total


def dead_replay_plan(
    cfg: QueueConfig, topic: str | None, job_id: str | None, delay: Delay | None
) -> Plan[int]:
    """Put dead jobs back (attempts reset, due after ``delay``); returns how many."""
    delay_ms = validation.delay_ms(0 if delay is None else delay)
    return (yield from _dead_batch_plan(cfg, "replayDead", topic, job_id, [delay_ms]))


def dead_purge_plan(cfg: QueueConfig, topic: str | None, job_id: str | None) -> Plan[int]:
    """Forget dead jobs; returns how many."""
    return (yield from _dead_batch_plan(cfg, "purgeDead", topic, job_id, []))


def claim_plan(
    cfg: QueueConfig, group: str, topic: str | None, min_idle: Delay | None, to: str | None
) -> Plan[ClaimResult]:
    """Re-queue (or hand ``to`` a consumer) deliveries idle past ``min_idle`` or their ttr."""
    validation.group(group)
    idle_ms = -1 if min_idle is None else validation.delay_ms(min_idle, "min_idle")
    target = "" if to is None else validation.consumer(to, "to")
    only = None if topic is None else validation.topic(topic)  # before any Redis call
    moved: list[str] = []
    dead: list[str] = []
    cleaned = 0
    removed: list[str] = []
    prune_ms = int(PRUNE_IDLE_S * 1000) if idle_ms < 0 else idle_ms
    seen_group = False
    for keys in partition_keys(cfg.name, cfg.partitions):
        served = _fields((yield Command(("HGETALL", keys.groups))))
        names = [only] if only is not None else sorted(served)
        for name in names:
            if served.get(name) != group:
                continue
            seen_group = True
            cursor = "-"
            while cursor != "0-0":
                reply = yield script("requeueStuck").call(
                    keys.script_keys(), [group, name, cursor, SCAN_BATCH, idle_ms, target])
                cursor = _text(reply[0])
                moved.extend(_text(i) for i in reply[1])
                dead.extend(_text(i) for i in reply[2])
                cleaned += int(reply[3])
            gone = yield script("pruneConsumers").call(
                keys.script_keys(), [group, name, prune_ms, PRUNE_BATCH])
            removed.extend(_text(n) for n in gone)
    if not seen_group:
        raise GroupNotFound(f"group: no topic of queue {cfg.name!r} is served by group {group!r}"
                            + (f" (topic {topic!r})" if topic else ""), field="group")
    return ClaimResult(moved, dead, cleaned, removed)
