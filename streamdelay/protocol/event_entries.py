"""Lifecycle events on the wire: the switch, the stream per partition, cursors, the merge.

Each partition keeps its own events stream (``PartitionKeys.events``), written by the scripts
that make the transitions (``lua/includes/emit_event.lua``) when field ``events`` of the
partition's ``meta`` hash holds the stream's bound. A reader merges the partitions by time;
its position is a cursor of one stream entry id per partition (docs/events.md#reading).
Pure: the sync and async readers (``client/event_feed.py``) drive it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..base.errors import ValidationError
from ..base.events import JobEvent
from . import streams
from .keys import partition_keys
from .plan import Command, Plan
from .replies import field_map, lenient_text, text

EVENTS_FIELD = "events"  # field of each partition's meta hash: the bound, absent = off
DEFAULT_EVENTS_MAXLEN = 10_000
MAX_EVENTS_MAXLEN = 10_000_000
READ_COUNT = 100  # entries per partition and read (an entry holds at most 100 events)
# a cursor's position in one partition: after the entry, or after its first n events (".n")
_POSITION = re.compile(r"^\d{1,20}-\d{1,20}(\.\d{1,9})?$")
_LAST_OF_MS = 18446744073709551615  # the highest sequence number of a stream entry id
_WHOLE = 1 << 62  # an event index past the last of any entry
Order = tuple[int, int, int]  # (ms, sequence, event index in the entry)
Fields = dict[str, Any]  # an entry's fields in order (bytes values as redis-py gives them)


def events_bound(events: bool | None, maxlen: int) -> int | None:
    """What the partition check writes to ``meta``'s ``events`` field: the bound when events
    are on, 0 when switched off, None to leave the queue's setting as it is."""
    if events is None:
        return None
    return maxlen if events else 0


_EPOCH_TEXT = re.compile(r"^[0-9]{1,30}$")


def since_problem(text: str) -> str | None:
    """What keeps ``text`` from being a resume position of any queue (None: epoch ms in range,
    or a cursor's form: stream ids joined by ','). Whether a cursor fits this queue (its
    partition count) is ``start_ids``' check."""
    if _EPOCH_TEXT.match(text):
        return None if int(text) < 1 << 53 else "epoch ms out of range (below 2^53)"
    if all(_POSITION.match(part) for part in text.split(",")):
        return None
    return ("neither epoch ms nor a cursor (an event's cursor: stream ids such as "
            "1700000000000-0 joined by ',')")


def start_ids(partitions: int, since: object) -> list[str]:
    """Per-partition stream ids to read after, for ``since``: None (everything kept), epoch ms
    (an int) or a ``datetime`` (events at or after that time), or a cursor (``JobEvent.cursor``,
    the SSE ``Last-Event-ID``: events after it). Anything else raises ``ValidationError``
    naming ``since``."""
    if since is None:
        return ["0-0"] * partitions
    if isinstance(since, datetime):
        since = int(since.timestamp() * 1000)
    if isinstance(since, str) and since.isdigit():
        since = int(since)
    if isinstance(since, int) and not isinstance(since, bool):
        if not 0 <= since < 1 << 53:
            raise ValidationError("since: epoch ms out of range", field="since")
        start = f"{since - 1}-{_LAST_OF_MS}" if since > 0 else "0-0"
        return [start] * partitions
    if isinstance(since, str):
        ids = since.split(",")
        if len(ids) != partitions or not all(_POSITION.match(i) for i in ids):
            raise ValidationError(
                f"since: not a cursor of this queue ({partitions} stream ids joined by ',')",
                field="since")
        return ids
    raise ValidationError(f"since: must be epoch ms, a datetime or a cursor, not "
                          f"{type(since).__name__}", field="since")


def _order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


def _position(position: str) -> tuple[str, int]:
    """A partition's cursor position as (entry id, events of that entry given; 0: all)."""
    eid, _, given = position.partition(".")
    return eid, int(given or 0)


def _before(entry_id: str) -> str:
    """The stream id right before ``entry_id``: an XREAD after it gives that entry again."""
    ms, seq = _order(entry_id)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{_LAST_OF_MS}" if ms > 0 else "0-0"


def read_command(keys: Sequence[str], ids: Sequence[str], block_ms: int | None
                 ) -> tuple[Any, ...]:
    """The arguments of ``streams.read`` of ``READ_COUNT`` entries after ``ids`` (keys of one
    slot on a cluster)."""
    return streams.read(keys, ids, READ_COUNT, block_ms).args


def read_entries(reply: Any) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """An XREAD reply (RESP2 or RESP3: ``streams.read_reply``) by stream key, each entry's
    fields as text."""
    return {key: [(eid, field_map(fields)) for eid, fields in entries]
            for key, entries in streams.read_reply(reply)}


EventTuple = tuple[str, str, str, int, int, str]  # kind, id, topic, attempt, at, detail


def _changes(packed: bytes) -> list[tuple[int, bytes]]:
    """``<event index> <value>`` pairs, space-separated: where a value starts to hold."""
    parts = packed.split(b" ") if packed else []
    return [(int(parts[n]), parts[n + 1]) for n in range(0, len(parts) - 1, 2)]


def _topic_changes(packed: bytes) -> list[tuple[int, bytes]]:
    """``<event index> <byte length> <topic>``, back to back."""
    out, at = [], 0
    while at < len(packed):
        index, _, rest = packed[at:at + 48].partition(b" ")
        size, _, _ = rest.partition(b" ")
        start = at + len(index) + len(size) + 2
        out.append((int(index), packed[start:start + int(size)]))
        at = start + int(size)
    return out


def _spread(changes: list[tuple[int, bytes]], count: int) -> list[bytes]:
    """One value per event (1..count) from the indexes where values change."""
    out: list[bytes] = []
    value = b""
    pending = iter(changes)
    upcoming = next(pending, None)
    for index in range(1, count + 1):
        while upcoming is not None and upcoming[0] <= index:
            value = upcoming[1]
            upcoming = next(pending, None)
        out.append(value)
    return out


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def entry_events(fields: Any) -> list[EventTuple]:
    """The events of one events stream entry, in order (lua/includes/emit_event.lua): one
    (fields ``k i t a at d``) or several (packed lists: ``n i d k a @ t``); none for an entry
    another client wrote in another shape."""
    one = ({text(k): v for k, v in fields.items()} if isinstance(fields, dict)
           else {text(fields[n]): fields[n + 1] for n in range(0, len(fields) - 1, 2)})
    try:
        if "n" not in one:
            return [(text(one["k"]), lenient_text(one["i"]), text(one["t"]), int(one["a"]),
                     int(one["at"]), lenient_text(one.get("d", b"")))]
        count = int(one["n"])
        ids, details = _raw(one["i"]).split(b"\n"), _raw(one["d"]).split(b"\n")
        if not 0 < count == len(ids) == len(details):
            return []
        kinds = _spread(_changes(_raw(one["k"])), count)
        topics = _spread(_topic_changes(_raw(one["t"])), count)
        attempts = _spread(_changes(_raw(one["a"])), count)
        times = _spread(_changes(_raw(one["@"])), count)
        return [(text(kinds[n]), lenient_text(ids[n]), text(topics[n]), int(attempts[n]),
                 int(times[n]), lenient_text(details[n])) for n in range(count)]
    except (KeyError, ValueError, TypeError, IndexError):
        return []


class EventMerger:
    """Merges the events of every partition by time and keeps the cursor.

    ``add`` takes one read's entries of a partition (and whether the read was full: more may
    follow right away); ``ready`` gives the events that can be yielded in time order, holding
    back what a full partition's next page (or a partition not read yet) could still precede.
    An entry may hold several events: a cursor position ``<entry id>.<n>`` is after its first
    n events (docs/events.md#reading).
    """

    def __init__(self, ids: Sequence[str], topic: str | None = None) -> None:
        """Start after ``ids`` (positions, one per partition); keep only ``topic``'s events."""
        self.ids = list(ids)
        self.topic = topic
        self._skip: dict[int, tuple[str, int]] = {}  # partition: (entry id, events given)
        self._read: list[str] = []  # where the next read of each partition starts
        for partition, position in enumerate(self.ids):
            eid, given = _position(position)
            if given:
                self._skip[partition] = (eid, given)
                self._read.append(_before(eid))
            else:
                self._read.append(eid)
        # (order, partition, entry id, events in the entry, event)
        self._pending: list[tuple[Order, int, str, int, EventTuple]] = []
        self._horizon: dict[int, Order] = {}  # full partitions: past their last read entry
        self._unread = set(range(len(self.ids)))  # partitions not read once yet: hold all back

    def read_ids(self) -> list[str]:
        """Where the next read of each partition starts: after what was read already."""
        return list(self._read)

    def add(self, partition: int, entries: Iterable[tuple[str, Any]], full: bool) -> None:
        """One read of ``partition``: its entries (id, fields), oldest first; ``full``: the read
        hit its COUNT (the partition's next entries are not known yet)."""
        self._unread.discard(partition)
        last = None
        for eid, fields in entries:
            last = eid
            ms, seq = _order(eid)
            events = entry_events(fields)
            first = 0
            skip = self._skip.pop(partition, None)
            if skip is not None and skip[0] == eid:
                first = skip[1]  # resuming inside this entry: its first events were given
            for n in range(first, len(events)):
                self._pending.append(((ms, seq, n), partition, eid, len(events), events[n]))
        if last is not None:
            self._read[partition] = last
        if full and last is not None:
            self._horizon[partition] = (*_order(last), _WHOLE)
        else:
            self._horizon.pop(partition, None)

    def ready(self) -> list[JobEvent]:
        """The events that no partition's unread entries can precede, oldest first."""
        if self._unread:
            return []
        limit = min(self._horizon.values(), default=None)
        self._pending.sort(key=lambda row: (row[0][:2], row[1], row[0][2]))
        out: list[JobEvent] = []
        keep = []
        for row in self._pending:
            if limit is not None and row[0] > limit:
                keep.append(row)
                continue
            (_, _, n), partition, eid, total, event = row
            self.ids[partition] = eid if n + 1 >= total else f"{eid}.{n + 1}"
            if self.topic is None or event[2] == self.topic:
                out.append(_job_event(event, ",".join(self.ids), partition))
        self._pending = keep
        return out

    @property
    def cursor(self) -> str:
        """The position after the last event given by ``ready``."""
        return ",".join(self.ids)


def _job_event(event: EventTuple, cursor: str, partition: int) -> JobEvent:
    kind, job_id, topic, attempt, at, detail = event
    return JobEvent(kind=kind, id=job_id, topic=topic, attempt=attempt, at=at, detail=detail,
                    cursor=cursor, partition=partition)


def parse_event(fields: Any, cursor: str, partition: int) -> JobEvent | None:
    """The first event of one events stream entry as a ``JobEvent`` (``entry_events``); None for
    an entry another client wrote in another shape."""
    events = entry_events(fields)
    return _job_event(events[0], cursor, partition) if events else None


def latest_events_plan(queue: str, partitions: int, limit: int
                       ) -> Plan[tuple[bool, list[JobEvent]]]:
    """(whether the queue keeps events, its newest ``limit`` events, newest first): one
    ``XREVRANGE ... COUNT limit`` per partition, merged by time (the dashboard's live panel)."""
    every = partition_keys(queue, partitions)
    bound = yield Command(("HGET", every[0].meta, EVENTS_FIELD))
    rows: list[tuple[Order, int, str, EventTuple]] = []
    for partition, keys in enumerate(every):
        reply = yield streams.entries_back(keys.events, count=limit)
        for eid, fields in streams.entries(reply):
            events = entry_events(fields)
            rows.extend(((*_order(eid), n), partition,
                         eid if n + 1 == len(events) else f"{eid}.{n + 1}", event)
                        for n, event in enumerate(events))
    rows.sort(key=lambda row: (row[0][:2], row[1], row[0][2]), reverse=True)
    on = bound is not None and text(bound) not in ("", "0")
    return on, [_job_event(event, position, partition)
                for _, partition, position, event in rows[:limit]]
