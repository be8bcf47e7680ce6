"""Listing jobs page by page: the I/O-free plan behind ``Queue.jobs``, ``AsyncQueue.jobs`` and
``streamdelay jobs`` (docs/operations.md#list-jobs).

Each page is one ``listJobs`` call per partition, sent together. Every call is bounded: at most
``limit`` rows per topic, ``SCAN`` members of the delayed set examined, ``BYTES`` of records.
Positions order the whole queue: delayed jobs by (due ms, job id), the streams by (entry id,
topic, partition), so one cursor spans every partition and topic. A partition that stopped
early reports how far it looked; the page never goes past the nearest such point, so no job is
skipped, and a page may hold fewer than ``limit`` jobs while its cursor is not None.

Ready jobs of staged topics (priorities, fairness keys: docs/priorities.md) wait in lanes, not
in a stream: the ready listing gives them after the streams' ready jobs, ordered by (partition,
topic, key, rank, job id), read by ``listStaged`` (bounded the same way), whose first page rides
in the round trip of the streams' pages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..base import validation
from ..base.errors import ValidationError
from ..base.models import JobInfo
from ..protocol.keys import partition_keys, partition_of
from ..protocol.plan import Command, Commands, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import ListedRow, parse_list
from ..protocol.scripts import ScriptCall, script
from .call_plans import job_info, with_options

ListState = Literal["delayed", "ready", "reserved", "dead", "waiting"]
STATES: tuple[ListState, ...] = ("delayed", "ready", "reserved", "dead", "waiting")
SORTED = ("delayed", "waiting")  # listed from a sorted set by (ms, id): due, or created
# (waiting for their parents, docs/workflows.md: the sorted set PREFIX wjobs)
MAX_LIMIT = 1000
SCAN = 1000  # members of the delayed set one call examines when filtering by topic
BYTES = 4 << 20  # records one call copies into its reply, about (per partition)
_LETTER = {"delayed": "d", "ready": "r", "reserved": "v", "dead": "x", "waiting": "w"}

# A position: delayed (due, id, 0), waiting (created, id, 0); streams (ms, seq, topic,
# partition) as a tuple that sorts.
Position = tuple[Any, ...]


@dataclass(frozen=True)
class JobPage:
    """One page of ``Queue.jobs``: the jobs in order and the cursor of the next page (None at
    the end). A page may be shorter than the limit while ``cursor`` is not None."""

    jobs: list[JobInfo] = field(default_factory=list)
    cursor: str | None = None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def score(value: Any) -> int | float:
    """A delayed-set score as Redis gives it (``1700000000000``, ``1e+17``, ``inf``, ``1.5``)
    as a number: an int when it is a whole one, else a float (``inf`` included). A foreign
    client may write any score; a listing orders by it and never fails on one
    (docs/security.md#receipts)."""
    found = _text(value)
    try:
        return int(found)
    except ValueError:
        number = float(found)  # Redis scores are numbers: never NaN
        return int(number) if number.is_integer() else number


def _entry(value: str) -> tuple[int, int]:
    ms, _, seq = value.partition("-")
    return int(ms), int(seq)


def encode_cursor(state: ListState, pos: Position) -> str:
    """The cursor text of a position (opaque to callers; stable within a release)."""
    if state in SORTED:
        return f"{_LETTER[state]}:{pos[0]}:{pos[1]}"
    return f"{_LETTER[state]}:{pos[0]}-{pos[1]}:{pos[3]}:{pos[2]}"


def decode_cursor(state: ListState, cursor: str) -> Position:
    """The position of a cursor from ``encode_cursor``; ValidationError(field='cursor')."""
    try:
        letter, rest = cursor.split(":", 1)
        if letter != _LETTER[state]:
            raise ValueError(f"it is a cursor of another state than {state}")
        if state in SORTED:
            due, job = rest.split(":", 1)
            return score(due), validation.job_id(job), 0
        entry, part, topic = rest.split(":", 2)
        ms, seq = _entry(entry)
        return ms, seq, validation.topic(topic), int(part)
    except (ValueError, ValidationError) as exc:
        raise ValidationError(f"cursor: {cursor!r} is not a cursor of a {state} page "
                              f"({exc}); pass the cursor a page returned", field="cursor") from exc


def _args(state: ListState, topic: str, limit: int, pos: Position | None, part: int) -> list[Any]:
    scan = limit if not topic else max(limit, SCAN)
    if pos is None:
        return [state, topic, limit, scan, BYTES, "", "", "0"]
    if state in SORTED:
        return [state, topic, limit, scan, BYTES, pos[0], pos[1], "0"]
    return [state, topic, limit, scan, BYTES, f"{pos[0]}-{pos[1]}", pos[2],
            "1" if part <= pos[3] else "0"]


def _position(state: ListState, pos1: Any, pos2: Any, part: int) -> Position:
    """A row's (or a walk's end's) position: delayed (due, id, 0); the streams (ms, seq,
    topic, partition)."""
    if state in SORTED:
        return score(pos1), _text(pos2), 0
    ms, seq = _entry(_text(pos1))
    return ms, seq, _text(pos2), part


def listed_options_plan(cfg: QueueSpec, jobs: list[JobInfo]) -> Plan[list[JobInfo]]:
    """``jobs`` with their options (priority, key, deadline): one ``HMGET`` of each partition's
    ``opts`` hash, all in one pipeline."""
    by_partition: dict[int, list[int]] = {}
    for index, info in enumerate(jobs):
        by_partition.setdefault(partition_of(info.id, cfg.partitions), []).append(index)
    keys = partition_keys(cfg.name, cfg.partitions)
    parts = sorted(by_partition)
    replies = yield Commands(tuple(
        Command(("HMGET", keys[p].opts, *(jobs[i].id for i in by_partition[p])))
        for p in parts))
    found = list(jobs)
    for part, values in zip(parts, replies, strict=True):
        for index, value in zip(by_partition[part], values, strict=True):
            found[index] = with_options(jobs[index], value)
    return found


def jobs_plan(cfg: QueueSpec, state: str, topic: str | None = None, limit: int = 100,
              cursor: str | None = None) -> Plan[JobPage]:
    """One page of the jobs in ``state`` (of ``topic``), after ``cursor``; bounded work."""
    page, _ = yield from timed_jobs_plan(cfg, state, topic, limit, cursor)
    return page


def timed_jobs_plan(cfg: QueueSpec, state: str, topic: str | None = None, limit: int = 100,
                    cursor: str | None = None) -> Plan[tuple[JobPage, int]]:
    """``jobs_plan`` and the server time of its replies (epoch ms; the search's bulk
    reschedule counts its target from it, ``search_plans.py``)."""
    if state not in STATES:
        raise ValidationError(f"state: {state!r} is not one of {', '.join(STATES)}",
                              field="state")
    chosen: ListState = state
    only = "" if topic is None else validation.topic(topic)
    validation.positive_int(limit, "limit", MAX_LIMIT)
    if chosen == "ready" and cursor is not None and cursor.startswith(LANES):
        return (yield from lanes_plan(cfg, only, limit, decode_lanes(cursor)))
    pos = None if cursor is None else decode_cursor(chosen, cursor)
    listing = script("listJobs")
    calls = [listing.call(k.script_keys(), _args(chosen, only, limit, pos, k.partition))
             for k in partition_keys(cfg.name, cfg.partitions)]
    if chosen == "ready":  # the lanes' first page, in the same round trip
        calls += lane_calls(cfg, only, limit, (0, "", "", ""))
        raw = yield calls
        raw, lanes = raw[:cfg.partitions], raw[cfg.partitions:]
    else:
        raw = [(yield calls[0])] if len(calls) == 1 else (yield calls)
    replies = [parse_list(reply) for reply in raw]
    rows: list[tuple[Position, ListedRow]] = []
    bound: Position | None = None
    for part, reply in enumerate(replies):
        if reply.reached is not None:
            reached = _position(chosen, *reply.reached, part)
            bound = reached if bound is None else min(bound, reached)
        rows.extend((_position(chosen, row.pos1, row.pos2, part), row) for row in reply.rows)
    rows.sort(key=lambda item: item[0])
    if bound is not None:
        rows = [item for item in rows if item[0] <= bound]
    next_pos = bound
    if len(rows) > limit:
        rows = rows[:limit]
        next_pos = rows[-1][0]
    jobs = [job_info(row.job_id, row.job) for _, row in rows]
    now = max(reply.now_ms for reply in replies)
    next_cursor = None if next_pos is None else encode_cursor(chosen, next_pos)
    if chosen == "ready" and next_cursor is None:  # the streams are done: on to the lanes
        more, next_cursor = merge_lanes(lanes, (0, "", "", ""), limit - len(jobs))
        jobs.extend(more)
    if jobs:  # their options (docs/keys.md#job-options): one HMGET per partition, one trip
        jobs = yield from listed_options_plan(cfg, jobs)
    return JobPage(jobs, next_cursor), now


# --- the lanes of staged topics (ready, state r) ---------------------------------------------

LANES = "l:"
LanePosition = tuple[int, str, str, str]  # partition, '<topic>|<key>', rank, job id


def encode_lanes(pos: LanePosition) -> str:
    """The cursor of a position in the lanes (``l:`` alone: their start)."""
    part, lane, rank, job = pos
    return f"{LANES}{part}:{rank}:{lane}|{job}" if lane else LANES


def decode_lanes(cursor: str) -> LanePosition:
    """The position of a lanes cursor; ValidationError(field='cursor')."""
    rest = cursor[len(LANES):]
    if not rest:
        return 0, "", "", ""
    try:
        part, rank, tail = rest.split(":", 2)
        lane, job = tail.rsplit("|", 1)
        topic, key = lane.split("|", 1)
        validation.topic(topic)
        if key:
            validation.fairness_key(key)
        if job:  # empty after a whole lane (rank inf)
            validation.job_id(job)
        return int(part), lane, str(score(rank)), job
    except (ValueError, ValidationError) as exc:
        raise ValidationError(f"cursor: {cursor!r} is not a cursor of a ready page ({exc}); "
                              f"pass the cursor a page returned", field="cursor") from exc


def lane_calls(cfg: QueueSpec, only: str, limit: int, pos: LanePosition) -> list[ScriptCall]:
    """``listStaged`` of the partitions from ``pos``'s on (its own after ``pos``)."""
    listing = script("listStaged")
    return [listing.call(k.script_keys(), [only, limit, BYTES,
                                           *(pos[1:] if k.partition == pos[0] else ("", "", ""))])
            for k in partition_keys(cfg.name, cfg.partitions) if k.partition >= pos[0]]


def merge_lanes(raw: list[Any], pos: LanePosition, room: int) -> tuple[list[JobInfo], str | None]:
    """Up to ``room`` jobs of the ``listStaged`` replies (partitions from ``pos``'s on, in
    order) and the cursor after them (None: the lanes are done). A partition that stopped
    early ends the page there, so no job is skipped."""
    jobs: list[JobInfo] = []
    last: LanePosition = pos
    for offset, reply in enumerate(raw):
        part = pos[0] + offset
        listed = parse_list(reply)
        for row in listed.rows:
            if len(jobs) >= room:
                return jobs, encode_lanes(last)
            jobs.append(job_info(row.job_id, row.job))
            last = (part, _text(row.pos1), _text(row.pos2), row.job_id)
        if listed.reached is not None:
            mark = reply[1]
            return jobs, encode_lanes((part, _text(mark[0]), _text(mark[1]), _text(mark[2])))
    return jobs, None


def lanes_plan(cfg: QueueSpec, only: str, limit: int, pos: LanePosition
               ) -> Plan[tuple[JobPage, int]]:
    """A ready page in the lanes after ``pos``, and the server time (epoch ms)."""
    if pos[0] >= cfg.partitions:
        raise ValidationError(f"cursor: partition {pos[0]} is not one of this queue's "
                              f"{cfg.partitions}", field="cursor")
    calls = lane_calls(cfg, only, limit, pos)
    raw = [(yield calls[0])] if len(calls) == 1 else (yield calls)
    jobs, cursor = merge_lanes(list(raw), pos, limit)
    if jobs:
        jobs = yield from listed_options_plan(cfg, jobs)
    return JobPage(jobs, cursor), max(int(reply[0]) for reply in raw)
