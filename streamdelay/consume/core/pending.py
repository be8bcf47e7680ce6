"""A consumer's own pending list, as plans: which entries it holds (``XPENDING`` of one
consumer), and their fields (``XRANGE`` of each), for a Worker that starts entries it holds but
does not run (docs/worker.md#handed-over-jobs).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ...base.errors import GroupNotFound
from ...protocol import streams
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Commands, Plan
from .taking import TIME, Entry, clock_ms


def own_pending_plan(keys: PartitionKeys, group: str, consumer: str, topics: Collection[str],
                     count: int) -> Plan[tuple[list[tuple[str, str]], bool]]:
    """``(topic, entry id)`` of ``consumer``'s pending entries on ``keys``' partition, oldest
    first per topic (at most ``count`` per topic), and whether some topic had more. A topic
    whose group is gone is left out (the read loop registers again)."""
    found: list[tuple[str, str]] = []
    more = False
    for topic in sorted(topics):
        try:
            rows = streams.pending_rows((yield streams.pending_range(
                keys.stream(topic), group, count, consumer)))
        except GroupNotFound:
            continue
        found.extend((topic, row.entry_id) for row in rows)
        more = more or len(rows) >= count
    return found, more


def entries_plan(keys: PartitionKeys, chosen: Sequence[tuple[str, str]]) -> Plan[list[Entry]]:
    """The entries ``(topic, entry id)`` of ``keys``' partition still in their streams, with
    their fields and the server clock (one round trip); those gone are left out."""
    if not chosen:
        return []
    *replies, clock = yield Commands((*(streams.entries_range(keys.stream(topic), eid, eid)
                                        for topic, eid in chosen), TIME))
    now_ms = clock_ms(clock)
    found = [(topic, streams.entries(reply)) for (topic, _), reply in zip(chosen, replies,
                                                                          strict=True)]
    return [Entry(keys.partition, topic, rows[0][0], rows[0][1], now_ms=now_ms)
            for topic, rows in found if rows]
