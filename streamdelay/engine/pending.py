"""A consumer's own pending list, as plans: which entries it holds (``XPENDING`` of one
consumer), and their fields (``XRANGE`` of each), for a Worker that starts entries it holds but
does not run (docs/worker.md#handed-over-jobs).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ..base.errors import GroupNotFound
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command, Commands, Plan
from ..protocol.replies import text
from .taking import TIME, Entry, clock_ms


def _entry_id(row: Any) -> str:
    """The entry id of one row of the extended ``XPENDING`` reply (a map, or the raw row)."""
    return text(row["message_id"] if isinstance(row, dict) else row[0])


def own_pending_plan(keys: PartitionKeys, group: str, consumer: str, topics: Collection[str],
                     count: int) -> Plan[tuple[list[tuple[str, str]], bool]]:
    """``(topic, entry id)`` of ``consumer``'s pending entries on ``keys``' partition, oldest
    first per topic (at most ``count`` per topic), and whether some topic had more. A topic
    whose group is gone is left out (the read loop registers again)."""
    found: list[tuple[str, str]] = []
    more = False
    for topic in sorted(topics):
        try:
            rows = yield Command(("XPENDING", keys.stream(topic), group, "-", "+", count,
                                  consumer))
        except GroupNotFound:
            continue
        found.extend((topic, _entry_id(row)) for row in rows)
        more = more or len(rows) >= count
    return found, more


def entries_plan(keys: PartitionKeys, chosen: Sequence[tuple[str, str]]) -> Plan[list[Entry]]:
    """The entries ``(topic, entry id)`` of ``keys``' partition still in their streams, with
    their fields and the server clock (one round trip); those gone are left out."""
    if not chosen:
        return []
    *replies, clock = yield Commands((*(Command(("XRANGE", keys.stream(topic), eid, eid))
                                        for topic, eid in chosen), TIME))
    now_ms = clock_ms(clock)
    return [Entry(keys.partition, topic, text(rows[0][0]), rows[0][1], now_ms=now_ms)
            for (topic, _), rows in zip(chosen, replies, strict=True) if rows]
