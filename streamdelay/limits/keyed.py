"""What ``stats`` shows of staged topics (docs/priorities.md): their jobs ready in the lanes,
and the keys with the most of them (bounded: ``TOP_KEYS``), summed over the partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.keys import PartitionKeys, partition_keys
from ..protocol.plan import Command, Commands, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import field_map, scored_members, text

TOP_KEYS = 10  # keys shown per topic, those with the most ready jobs


@dataclass(frozen=True)
class Backlog:
    """A staged topic's ready jobs, and its top keys by ready jobs (``""``: no key)."""

    ready: int
    keys: tuple[tuple[str, int], ...]


def backlog_plan(cfg: QueueSpec) -> Plan[tuple[frozenset[str], dict[str, Backlog]]]:
    """The staged topics, and the backlog of those with ready jobs: one round trip, and one
    more (``ZREVRANGE`` per topic and partition) when some have."""
    parts = partition_keys(cfg.name, cfg.partitions)
    replies = yield Commands((Command(("HGETALL", PartitionKeys(cfg.name, 0).staged)),
                              *(Command(("HGETALL", k.ready)) for k in parts)))
    staged = frozenset(field_map(replies[0]))
    ready: dict[str, int] = {}
    for reply in replies[1:]:
        for topic, count in field_map(reply).items():
            ready[topic] = ready.get(topic, 0) + int(count)
    topics = sorted(t for t, n in ready.items() if n > 0)
    if not topics:
        return staged, {}
    tops = yield Commands(tuple(Command(("ZREVRANGE", k.backlog(t), 0, TOP_KEYS - 1,
                                         "WITHSCORES")) for k in parts for t in topics))
    found: dict[str, Backlog] = {}
    for i, topic in enumerate(topics):
        keys: dict[str, int] = {}
        for p in range(len(parts)):
            for member, score in scored_members(tops[p * len(topics) + i]):  # RESP2 or RESP3
                keys[text(member)] = keys.get(text(member), 0) + int(score)
        top = sorted(keys.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_KEYS]
        found[topic] = Backlog(ready[topic], tuple(top))
    return staged, found
