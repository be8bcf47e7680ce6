"""The group upkeep every consumer shares, as plans (docs/worker.md#reclaiming-jobs,
docs/pull.md#who-reclaims): bind topics to a group (``registerGroup``), say in the fleet record
that a consumer is live (``joinFleet``), re-queue deliveries idle past their ttr
(``requeueStuck``) and remove consumers gone and owning nothing (``pruneConsumers``).

One reclaim and one prune over partitions and topics, driven by the Worker's reclaim duty, by
a reserve caller's rounds, by ``streamdelay serve`` for its HTTP consumers and by the
operator's ``claim``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...base import validation
from ...base.errors import GroupNotFound
from ...base.models import ClaimResult, Delay
from ...protocol.keys import PartitionKeys, partition_keys
from ...protocol.layouts import join_fleet_call, layout_of
from ...protocol.plan import Command, Plan
from ...protocol.replies import RequeueReply, field_map, parse_requeue, texts
from ...protocol.scripts import script
from .constants import PRUNE_BATCH, PRUNE_IDLE_S, REQUEUE_BATCH

Pair = tuple[str, str]  # (topic, group)


def register_plan(queue: str, partitions: int, group: str, topics: Collection[str]
                  ) -> Plan[None]:
    """Bind ``topics`` to ``group`` and create the group on every partition
    (``registerGroup``); a topic served by another group raises ``ConfigError``."""
    calls = [script("registerGroup").call(k.script_keys(), [group, *sorted(topics)])
             for k in partition_keys(queue, partitions)]
    yield calls if len(calls) > 1 else calls[0]


def join_fleet_plan(queue: str, consumer: str, info: str = "", info_ttl_s: float = 0.0
                    ) -> Plan[int]:
    """Say that ``consumer`` is live and which record layouts it reads (with ``info``, what it
    is: docs/operations.md#workers); the queue's layout, or a ``LayoutError`` when it is one
    this release cannot read (docs/keys.md#fleet)."""
    return layout_of((yield join_fleet_call(queue, consumer, info, info_ttl_s)),
                     PartitionKeys(queue, 0).meta)


@dataclass
class Reclaimed:
    """What one reclaim pass did: per (topic, group) the ids re-queued (or handed over) and
    those gone dead, entries cleaned, the pairs it looked at, and those whose group or stream
    was gone (the consumer registers again)."""

    moved: dict[Pair, list[str]] = field(default_factory=dict)
    dead: dict[Pair, list[str]] = field(default_factory=dict)
    moved_ids: list[str] = field(default_factory=list)  # in the order of the walk
    dead_ids: list[str] = field(default_factory=list)
    cleaned: int = 0
    seen: set[Pair] = field(default_factory=set)
    gone: dict[Pair, GroupNotFound] = field(default_factory=dict)

    def count(self, pair: Pair | None = None) -> int:
        """Deliveries re-queued or gone dead (of one pair, or all)."""
        pairs = self.seen if pair is None else {pair}
        return sum(len(self.moved.get(p, ())) + len(self.dead.get(p, ())) for p in pairs)

    def _add(self, pair: Pair, reply: RequeueReply) -> None:
        self.moved.setdefault(pair, []).extend(reply.moved)
        self.dead.setdefault(pair, []).extend(reply.dead)
        self.moved_ids.extend(reply.moved)
        self.dead_ids.extend(reply.dead)
        self.cleaned += reply.cleaned


def _pairs(keys: PartitionKeys, group: str | None, topics: Collection[str] | None,
           recorded: bool) -> Plan[list[Pair]]:
    """The (topic, group) pairs of one partition to look at: the given group's ``topics``, or
    (either unknown, or ``recorded``) what the partition's groups hash records, filtered by
    the given ones."""
    if group is not None and topics is not None and not recorded:
        return [(topic, group) for topic in sorted(topics)]
    served = field_map((yield Command(("HGETALL", keys.groups))))
    return [(topic, serving) for topic, serving in sorted(served.items())
            if (group is None or serving == group) and (topics is None or topic in topics)]


@dataclass
class Witness:
    """What a Worker's reclaim adds to the walk (docs/guarantees.md#never-twice-at-once): it
    counts only the silence it witnessed, and never takes what its own consumer runs.

    Per partition (its own server and clock): the server time of this reclaimer's last call
    there and since when it has been in contact. A call more than ``gap_ms`` after the one
    before it (Redis down or restarted, this process cut off), or the first one, starts the
    contact anew: ``requeueStuck`` then counts an entry as idle at most since that call.
    ``running``: (partition, topic) -> the entry ids ``consumer`` runs now."""

    consumer: str
    gap_ms: int
    last_ms: dict[int, int] = field(default_factory=dict)
    since_ms: dict[int, int] = field(default_factory=dict)
    running: Mapping[tuple[int, str], Sequence[str]] = field(default_factory=dict)

    def lost(self) -> None:
        """A call failed: the next one starts the contact anew, on every partition."""
        self.last_ms.clear()
        self.since_ms.clear()

    def args(self, partition: int, topic: str) -> list[str | int]:
        """The optional ``requeueStuck`` arguments of one call."""
        return [self.last_ms.get(partition, 0), self.since_ms.get(partition, 0), self.gap_ms,
                self.consumer, *self.running.get((partition, topic), ())]

    def saw(self, partition: int, reply: Any) -> None:
        """Keep the server's time and the contact's start of a call that answered (the 5th and
        6th values of its raw reply)."""
        if len(reply) >= 6 and int(reply[5]) >= 0:
            self.last_ms[partition], self.since_ms[partition] = int(reply[4]), int(reply[5])


def requeue_stuck_plan(keys: PartitionKeys, group: str, topic: str, idle_ms: int, target: str,
                       witness: Witness | None = None) -> Plan[list[RequeueReply]]:
    """Walk one topic's pending list to its end, re-queueing (or handing ``target``) deliveries
    idle past ``idle_ms`` (-1: each job's ttr); as ``witness`` saw the silence, if given."""
    replies: list[RequeueReply] = []
    cursor = "-"
    while cursor != "0-0":
        extra = [] if witness is None else witness.args(keys.partition, topic)
        raw = yield script("requeueStuck").call(
            keys.script_keys(), [group, topic, cursor, REQUEUE_BATCH, idle_ms, target, *extra])
        reply = parse_requeue(raw)
        if witness is not None:
            witness.saw(keys.partition, raw)
        replies.append(reply)
        cursor = reply.cursor
    return replies


def reclaim_plan(queue: str, partitions: int, group: str | None = None,
                 topics: Collection[str] | None = None, idle_ms: int = -1, target: str = "",
                 recorded: bool = False, witness: Witness | None = None) -> Plan[Reclaimed]:
    """THE reclaim: on every partition, re-queue (or hand ``target``) the deliveries of
    ``group``'s ``topics`` idle past ``idle_ms`` (-1: each job's ttr). ``group`` or ``topics``
    None (or ``recorded``): the pairs the queue records, filtered by the given ones. A
    Worker's ``witness``: silence it did not witness is not counted, its own runs not taken."""
    found = Reclaimed()
    for keys in partition_keys(queue, partitions):
        for pair in (yield from _pairs(keys, group, topics, recorded)):
            found.seen.add(pair)
            try:
                for reply in (yield from requeue_stuck_plan(keys, pair[1], pair[0], idle_ms,
                                                            target, witness)):
                    found._add(pair, reply)
            except GroupNotFound as exc:  # the stream or group was deleted
                found.gone.setdefault(pair, exc)
    return found


def prune_plan(queue: str, partitions: int, group: str | None = None,
               topics: Collection[str] | None = None, idle_ms: int = int(PRUNE_IDLE_S * 1000),
               recorded: bool = False) -> Plan[list[str]]:
    """THE prune: remove (up to ``PRUNE_BATCH`` per topic and partition) the consumers of the
    group that own nothing and were silent ``idle_ms``; their names."""
    removed: list[str] = []
    for keys in partition_keys(queue, partitions):
        for topic, serving in (yield from _pairs(keys, group, topics, recorded)):
            gone = yield script("pruneConsumers").call(
                keys.script_keys(), [serving, topic, idle_ms, PRUNE_BATCH])
            removed.extend(texts(gone))
    return removed


def claim_plan(queue: str, partitions: int, group: str, topic: str | None,
               min_idle: Delay | None, to: str | None) -> Plan[ClaimResult]:
    """The operator's reclaim (``Queue.claim``): re-queue (or hand ``to`` a consumer)
    deliveries idle past ``min_idle`` or their ttr, then prune the group's consumers."""
    validation.group(group)
    idle_ms = -1 if min_idle is None else validation.delay_ms(min_idle, "min_idle")
    target = "" if to is None else validation.consumer(to, "to")
    only = None if topic is None else [validation.topic(topic)]  # before any Redis call
    found = yield from reclaim_plan(queue, partitions, group, only, idle_ms, target,
                                    recorded=True)
    if not found.seen:
        raise GroupNotFound(f"group: no topic of queue {queue!r} is served by group {group!r}"
                            + (f" (topic {topic!r})" if topic else ""), field="group")
    for error in found.gone.values():
        raise error
    prune_ms = int(PRUNE_IDLE_S * 1000) if idle_ms < 0 else idle_ms
    removed = yield from prune_plan(queue, partitions, group, only, prune_ms, recorded=True)
    return ClaimResult(found.moved_ids, found.dead_ids, found.cleaned, removed)
