"""How a job ended and what happened to it, on its page (docs/dashboard.md#pages): the kept
result (``AsyncQueue.result``, read without waiting: docs/results.md) of a job whose record
is gone or a ``done`` tombstone, its finish time, and its event timeline when the queue keeps
lifecycle events (docs/events.md).

The last progress its handler reported shows while it is kept (two ttrs after the heartbeat that
carried it). The timeline is bounded: a job's events are all in its partition's events stream, which
holds every job's, so the page reads at most ``TIMELINE_ENTRIES`` entries from the job's
creation on and as many back from its end (two reads in one round trip), keeps the job's
events and says when entries between the two were not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...base.errors import ResultTimeout
from ...base.models import JobInfo, JobResult
from ...client.queue import AsyncQueue
from ...io.runner import drive_async
from ...protocol import streams
from ...protocol.event_entries import EVENTS_FIELD, entry_events
from ...protocol.keys import PartitionKeys, partition_of
from ...protocol.plan import Command, Commands, Plan
from ...protocol.replies import lenient_text, text
from ...protocol.result_codec import progress_key
from .view_models import JobView, body_text, moment, relative

TIMELINE_ENTRIES = 100  # events stream entries read from each end of a job's life
ENDS = ("succeeded", "dead", "cancelled", "expired")  # the kinds that end a run
ENDED = ("done", "dead")  # record states whose result the page reads
MARGIN_MS = 1000  # around a job's creation and end (read_timeline)


@dataclass(frozen=True)
class EventRow:
    """One line of a job's event timeline."""

    kind: str
    when: str
    attempt: int
    detail: str
    at: int


@dataclass(frozen=True)
class Timeline:
    """A job's events, oldest first; ``on`` False: the queue keeps no events; ``partial``:
    entries between the two reads were not read (a busy queue), so events may be missing."""

    on: bool
    rows: list[EventRow] = field(default_factory=list)
    partial: bool = False
    entries: int = TIMELINE_ENTRIES  # read from each end
    progress: str | None = None  # the last progress its handler reported, JSON, while kept


@dataclass(frozen=True)
class Outcome:
    """How the job ended: fields for its record (``finished``, ``outcome``, ``result``),
    the result's value as text (succeeded) and its error (dead, cancelled)."""

    fields: list[tuple[str, str]]
    value: str | None = None
    error: str | None = None


def _order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


def _mentions(fields: Any, needle: bytes) -> bool:
    """Whether an events entry's ids field (``i``: one id, or the ids of a packed entry joined
    by line feeds) holds ``needle``; a cheap test before ``entry_events`` parses the entry."""
    pairs = (fields.items() if isinstance(fields, dict)
             else zip(fields[::2], fields[1::2], strict=False))
    for key, value in pairs:
        if key in (b"i", "i"):
            return needle in (value if isinstance(value, bytes) else str(value).encode())
    return True  # another shape: let the parser decide


def timeline_plan(q: AsyncQueue, job_id: str, since_ms: int | None, until_ms: int | None
                  ) -> Plan[Timeline]:
    """The events of ``job_id`` kept in its partition's stream between ``since_ms`` and
    ``until_ms`` (epoch ms; None: the stream's start or end): the switch, then at most
    ``TIMELINE_ENTRIES`` entries from the start and as many back from the end, read only."""
    keys = PartitionKeys(q.name, partition_of(job_id, q.config.partitions))
    start = "-" if since_ms is None else str(since_ms)
    end = "+" if until_ms is None else str(until_ms)
    # every partition's meta holds the switch (docs/events.md#the-switch): the job's own, so
    # the three reads share one slot (one node of a Cluster)
    bound, head, tail, progress = yield Commands((
        Command(("HGET", keys.meta, EVENTS_FIELD)),
        streams.entries_range(keys.events, start, end, TIMELINE_ENTRIES),
        streams.entries_back(keys.events, end, start, TIMELINE_ENTRIES),
        Command(("GET", progress_key(keys, job_id)))))
    on = bound is not None and text(bound) not in ("", "0")
    head, tail = streams.entries(head), streams.entries(tail)
    entries = dict([*head, *tail])
    head_ids = [eid for eid, _ in head]
    tail_ids = [eid for eid, _ in tail]
    partial = (len(head_ids) == TIMELINE_ENTRIES and len(tail_ids) == TIMELINE_ENTRIES
               and _order(tail_ids[-1]) > _order(head_ids[-1]))
    rows = []
    needle = job_id.encode()
    for eid in sorted(entries, key=_order):
        if not _mentions(entries[eid], needle):  # most entries: other jobs' (no full parse)
            continue
        for kind, found, _, attempt, at, detail in entry_events(entries[eid]):
            if found == job_id:
                rows.append(EventRow(kind, moment(at), attempt, detail, at))
    # 'entry id|JSON', kept two ttrs after the heartbeat that carried it (docs/results.md)
    last = None if progress is None else lenient_text(progress).partition("|")[2] or None
    return Timeline(on or bool(rows), rows, partial, progress=last)


async def read_timeline(q: AsyncQueue, job_id: str, info: JobInfo | None,
                        result: JobResult | None) -> Timeline:
    """The timeline of the job's current run: from its creation (its record's) to its end
    (the kept result's finish time), else the whole stream's ends. A second's margin each
    side: an entry's id is the script call's clock, which may be a millisecond behind the
    ``TIME`` the script wrote in the record or the result."""
    since = info.created - MARGIN_MS if info is not None else None
    until = result.finished + MARGIN_MS if info is None and result is not None else None
    return await drive_async(q.client, timeline_plan(q, job_id, since, until),
                             q.config.retry_for)


async def read_result(q: AsyncQueue, job_id: str, info: JobInfo | None) -> JobResult | None:
    """The kept result of a job that has ended (no record, a tombstone, a dead job), read
    without waiting; None for a job still running (its kept result is an earlier run's)."""
    if info is not None and info.state not in ENDED:
        return None
    try:
        found: JobResult | None = await q.result(job_id)
    except ResultTimeout:  # not ended after all: its record came back meanwhile
        return None
    return found


def outcome(info: JobInfo | None, result: JobResult | None, timeline: Timeline,
            now_ms: int) -> Outcome | None:
    """How the job ended, for its page; None for a job that has not ended."""
    if info is not None and info.state not in ENDED:
        return None
    ends = [row for row in timeline.rows if row.kind in ENDS]
    finished = result.finished if result is not None else ends[-1].at if ends else None
    fields = [("finished", "not known: no result or event kept" if finished is None
               else f"{moment(finished)} ({relative(finished, now_ms)})")]
    if info is not None and info.died is not None:
        fields = []  # a dead job's record says when it died (views.job_view)
    if timeline.progress is not None:
        fields.append(("progress", f"{timeline.progress} (the last its handler reported)"))
    if result is None:
        if info is not None and info.state == "done":  # keep_result 0 (docs/results.md)
            fields.append(("result", "not kept (the job's keep_result is 0, or it expired)"))
        return Outcome(fields)
    if info is not None and info.state == "done":
        fields.insert(0, ("outcome", result.state))
    if result.state == "succeeded":
        return Outcome(fields, value=body_text(result.value))
    if info is not None and info.error:  # a dead job's record shows its last error already
        return Outcome(fields)
    return Outcome(fields, error=result.error)


def result_view(result: JobResult) -> JobView:
    """The record part of the page of a job known only by its kept result (acknowledged
    without ``keep_done``, or purged): its state; no body, no actions."""
    return JobView(id=result.id, topic="", state=result.state,
                   fields=[("state", result.state)], body="", headers=[], error=None,
                   actions=())

