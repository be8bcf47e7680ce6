"""Lifecycle events on the wire: the switch, the stream per partition, cursors, the merge.

Each partition keeps its own events stream (``PartitionKeys.events``), written by the scripts
that make the transitions (``lua/includes/events.lua``) when field ``events`` of the
partition's ``meta`` hash holds the stream's bound. A reader merges the partitions by time;
its position is a cursor of one stream entry id per partition (docs/events.md#reading).
Pure: the sync and async readers (``producer/events.py``) drive it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from ..base.errors import ValidationError
from ..base.events import JobEvent
from .keys import partition_keys
from .plan import Command, Plan
from .replies import field_map, lenient_text, text

EVENTS_FIELD = "events"  # field of each partition's meta hash: the bound, absent = off
DEFAULT_EVENTS_MAXLEN = 10_000
MAX_EVENTS_MAXLEN = 10_000_000
READ_COUNT = 500  # entries per partition and read
_ENTRY_ID = re.compile(r"^\d{1,20}-\d{1,20}$")
_LAST_OF_MS = 18446744073709551615  # the highest sequence number of a stream entry id


def events_bound(events: bool | None, maxlen: int) -> int | None:
    """What the partition check writes to ``meta``'s ``events`` field: the bound when events
    are on, 0 when switched off, None to leave the queue's setting as it is."""
    if events is None:
        return None
    return maxlen if events else 0


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
        if len(ids) != partitions or not all(_ENTRY_ID.match(i) for i in ids):
            raise ValidationError(
                f"since: not a cursor of this queue ({partitions} stream ids joined by ',')",
                field="since")
        return ids
    raise ValidationError(f"since: must be epoch ms, a datetime or a cursor, not "
                          f"{type(since).__name__}", field="since")


def _order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq)


def read_command(keys: Sequence[str], ids: Sequence[str], block_ms: int | None
                 ) -> tuple[Any, ...]:
    """``XREAD [BLOCK ms] COUNT n STREAMS keys... ids...`` (keys of one slot on a cluster)."""
    block = ("BLOCK", block_ms) if block_ms is not None else ()
    return ("XREAD", *block, "COUNT", READ_COUNT, "STREAMS", *keys, *ids)


def read_entries(reply: Any) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """An XREAD reply (RESP2 list or RESP3 map, as redis-py gives it) by stream key."""
    if not reply:
        return {}
    pairs = reply.items() if isinstance(reply, dict) else ((row[0], row[1]) for row in reply)
    out: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for key, entries in pairs:
        if isinstance(reply, dict) and len(entries) == 1 and isinstance(entries[0], list):
            entries = entries[0]  # redis-py's RESP3 XREAD wraps each stream's list once more
        out[text(key)] = [(text(eid), field_map(fields)) for eid, fields in entries]
    return out


class EventMerger:
    """Merges the events of every partition by time and keeps the cursor.

    ``add`` takes one read's entries of a partition (and whether the read was full: more may
    follow right away); ``ready`` gives the events that can be yielded in time order, holding
    back what a full partition's next page (or a partition not read yet) could still precede.
    """

    def __init__(self, ids: Sequence[str], topic: str | None = None) -> None:
        """Start after ``ids`` (one per partition); keep only ``topic``'s events when given."""
        self.ids = list(ids)
        self.topic = topic
        self._pending: list[tuple[tuple[int, int], int, str, dict[str, str]]] = []
        self._horizon: dict[int, tuple[int, int]] = {}  # full partitions: their last read id
        self._unread = set(range(len(self.ids)))  # partitions not read once yet: hold all back

    def read_ids(self) -> list[str]:
        """Where the next read of each partition starts: after what was read already."""
        ids = list(self.ids)
        for _, partition, eid, _ in self._pending:
            if _order(eid) > _order(ids[partition]):
                ids[partition] = eid
        return ids

    def add(self, partition: int, entries: Iterable[tuple[str, dict[str, str]]],
            full: bool) -> None:
        """One read of ``partition``: its entries, oldest first; ``full``: the read hit its
        COUNT (the partition's next entries are not known yet)."""
        self._unread.discard(partition)
        last = None
        for eid, fields in entries:
            self._pending.append((_order(eid), partition, eid, fields))
            last = eid
        if full and last is not None:
            self._horizon[partition] = _order(last)
        else:
            self._horizon.pop(partition, None)

    def ready(self) -> list[JobEvent]:
        """The events that no partition's unread entries can precede, oldest first."""
        if self._unread:
            return []
        limit = min(self._horizon.values(), default=None)
        self._pending.sort(key=lambda row: (row[0], row[1]))
        out: list[JobEvent] = []
        keep = []
        for row in self._pending:
            if limit is not None and row[0] > limit:
                keep.append(row)
                continue
            _, partition, eid, fields = row
            self.ids[partition] = eid
            event = parse_event(fields, ",".join(self.ids), partition)
            if event is not None and (self.topic is None or event.topic == self.topic):
                out.append(event)
        self._pending = keep
        return out

    @property
    def cursor(self) -> str:
        """The position after the last event given by ``ready``."""
        return ",".join(self.ids)


def parse_event(fields: dict[str, str], cursor: str, partition: int) -> JobEvent | None:
    """One events stream entry (fields ``k i t a at d``, lua/includes/events.lua) as a
    ``JobEvent``; None for an entry another client wrote in another shape."""
    try:
        return JobEvent(kind=fields["k"], id=lenient_text(fields["i"]), topic=fields["t"],
                        attempt=int(fields["a"]), at=int(fields["at"]),
                        detail=fields.get("d", ""), cursor=cursor, partition=partition)
    except (KeyError, ValueError):
        return None


def latest_events_plan(queue: str, partitions: int, limit: int
                       ) -> Plan[tuple[bool, list[JobEvent]]]:
    """(whether the queue keeps events, its newest ``limit`` events, newest first): one
    ``XREVRANGE ... COUNT limit`` per partition, merged by time (the dashboard's live panel)."""
    every = partition_keys(queue, partitions)
    bound = yield Command(("HGET", every[0].meta, EVENTS_FIELD))
    rows: list[tuple[tuple[int, int], int, str, dict[str, str]]] = []
    for partition, keys in enumerate(every):
        reply = yield Command(("XREVRANGE", keys.events, "+", "-", "COUNT", limit))
        rows.extend((_order(text(eid)), partition, text(eid), field_map(fields))
                    for eid, fields in reply or ())
    rows.sort(key=lambda row: (row[0], row[1]), reverse=True)
    found = [parse_event(fields, eid, partition) for _, partition, eid, fields in rows[:limit]]
    on = bound is not None and text(bound) not in ("", "0")
    return on, [event for event in found if event is not None]
