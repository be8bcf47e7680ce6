"""Take: reading ready entries for a consumer, as plans both drivers run (the Worker's read and
take loops, a reserve round). A topic without a limit is read with ``XREADGROUP``; a limited
topic only through the shared ``takeLimited`` (docs/limits.md), whose reply says how long to
wait when it gave fewer than asked: for the next token (rate: the driver sleeps), for a freed
lease (concurrency: ``BLPOP`` on the topic's ``limitwake`` list) or for a new entry (drained:
``XREAD BLOCK`` from the group's last delivered id).

Every take that returns a job with a deadline reads the server clock with its entries (``TIME``
after the read in one pipeline once the reader has seen a deadline; else, and after
``takeLimited``, in one more round trip only when an entry carries one), so the open step can
tell a job whose deadline passed while it waited in its stream (docs/expiry.md).

Which topics are paused or limited is read here too: all of them at once (the Worker's view,
refreshed every ``REFRESH_S``), or one topic's pause flag and limit (a reserve round).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ...limits.limit_plans import (
    CONCURRENCY,
    DRAINED,
    RATE,
    limits_key,
    parse_limits,
    parse_take,
    take_call,
)
from ...limits.rates import TopicLimit
from ...protocol import streams as stream_io
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Command, Commands, Plan
from ...protocol.replies import field_map, text
from .leasing import leased_take_plan


class Entry(NamedTuple):
    """One stream entry a read or a take returned: where it is, and its fields."""

    partition: int
    topic: str
    entry_id: str
    fields: dict[Any, Any] | None
    leased: bool = False  # holds a lease in partition 0's slot (consume/core/leasing.py)
    now_ms: int = 0  # the server clock read with it (epoch ms; 0: not read)
    fresh: bool = False  # read new by XREADGROUP '>' (delivery count 1), with now_ms


TIME = Command(("TIME",))


def entry_priority(fields: dict[Any, Any] | None) -> str:
    """The priority a staged take wrote into a stream entry (field ``p``; ``"5"`` without
    one): what a Worker's handler start and an HTTP ``:reserve`` count a staged topic's
    lateness under (``<topic>#p<priority>``, docs/priorities.md)."""
    raw = (fields or {}).get(b"p", (fields or {}).get("p"))
    return raw.decode() if isinstance(raw, bytes) else str(raw or 5)


def clock_ms(reply: Any) -> int:
    """Epoch ms of a ``TIME`` reply (seconds, microseconds)."""
    return int(reply[0]) * 1000 + int(reply[1]) // 1000


def has_deadline(entries: Sequence[Entry]) -> bool:
    """Whether any of ``entries`` carries a job deadline (field ``x``, docs/expiry.md)."""
    return any(entry.fields and b"x" in entry.fields for entry in entries)


Streams = Mapping[str, tuple[int, str]]  # stream key -> (partition, topic)


def streams_of(keys: Sequence[PartitionKeys], topics: Sequence[str]) -> dict[str, tuple[int, str]]:
    """Each topic stream key of ``topics`` on ``keys``' partitions -> (partition, topic): how a
    read's reply is mapped back, by name (never by cutting the key apart)."""
    return {k.stream(t): (k.partition, t) for k in keys for t in topics}


def parse_read(reply: Any, streams: Streams, now_ms: int = 0) -> list[Entry]:
    """The entries of an ``XREADGROUP`` reply (RESP2 or RESP3: ``streams.read_reply``), oldest
    first per stream, with the server clock ``now_ms`` read with them (``fresh`` when it was
    read)."""
    found: list[Entry] = []
    for stream, entries in stream_io.read_reply(reply):
        partition, topic = streams[stream]
        found.extend(Entry(partition, topic, eid, fields, now_ms=now_ms, fresh=now_ms > 0)
                     for eid, fields in entries)
    return found


def read_plan(group: str, consumer: str, streams: Streams, count: int, block_ms: int | None,
              clock: bool = True) -> Plan[list[Entry]]:
    """One read of new entries of ``streams`` (``streams.read_group``), and ``TIME`` after it in
    the same pipeline: the server clock when the read returned. With ``clock=False`` the read
    goes alone, and ``TIME`` follows (one more round trip) only when an entry carries a job
    deadline: a reader that has seen no deadline pays nothing for expiry (docs/expiry.md#cost)."""
    read = stream_io.read_group(group, consumer, list(streams), count, block_ms)
    if clock:
        reply, now = yield Commands((read, TIME))
        return parse_read(reply, streams, clock_ms(now))
    entries = parse_read((yield read), streams)
    if has_deadline(entries):
        now_ms = clock_ms((yield TIME))
        entries = [entry._replace(now_ms=now_ms) for entry in entries]
    return entries


def take_now_plan(keys: PartitionKeys, group: str, consumer: str, topic: str, count: int
                  ) -> Plan[tuple[list[Entry], int, int, str]]:
    """One take through the limit: the entries and the reply's reason, wait and last id (for
    ``wait_plan``, which a driver runs after starting the entries). Partition 0 (every queue
    of one partition) takes with one ``takeLimited`` call; another partition in three steps
    around partition 0's limit state (``leasing.leased_take_plan``). When an entry carries a
    job deadline, ``TIME`` follows (one more round trip, only then)."""
    if keys.partition != 0:
        rows, reason, wait_ms, last_id, leased = yield from leased_take_plan(
            keys, group, consumer, topic, count)
        entries = [Entry(keys.partition, topic, eid, fields, leased) for eid, fields in rows]
    else:
        reply = parse_take((yield take_call(keys, group, consumer, topic, count)))
        entries = [Entry(keys.partition, topic, eid, fields) for eid, fields in reply.entries]
        reason, wait_ms, last_id = reply.reason, reply.wait_ms, reply.last_id
    if has_deadline(entries):
        now_ms = clock_ms((yield TIME))
        entries = [entry._replace(now_ms=now_ms) for entry in entries]
    return entries, reason, wait_ms, last_id


def wait_plan(keys: PartitionKeys, topic: str, reason: int, wait_ms: int, last_id: str,
              block_ms: int) -> Plan[float]:
    """Wait as a take's reply says (nothing when it got all it wanted), at most ``block_ms``;
    returns the seconds the driver still sleeps (a rate's next token)."""
    wait = max(1, min(wait_ms, block_ms))
    if reason == RATE:
        return wait / 1000
    if reason == CONCURRENCY:
        yield Command(("BLPOP", PartitionKeys(keys.queue, 0).limit_wake(topic),  # the limit's slot
                       f"{wait / 1000:.3f}"))
    elif reason == DRAINED:  # at once when an entry came after the take; else at the next XADD
        yield stream_io.read([keys.stream(topic)], [last_id or "$"], 1, max(1, block_ms))
    return 0.0


# --- pause and limits ---------------------------------------------------------------------

def is_limited(raw: Any) -> bool:
    """Whether a stored limit (an HGET reply) holds its topic back (a rate or a concurrency)."""
    if raw is None:
        return False
    limit = TopicLimit.from_stored(text(raw))
    return bool(limit.rate or limit.concurrency)


class Views(NamedTuple):
    """Which topics of a queue are paused, and which are limited (with their limits)."""

    paused: frozenset[str]
    limits: dict[str, TopicLimit]

    @property
    def limited(self) -> frozenset[str]:
        """The topics a limit holds back: taken only through ``takeLimited``."""
        return frozenset(t for t, limit in self.limits.items() if limit.rate or limit.concurrency)


def paused_command(queue: str) -> Command:
    """``HGETALL`` of the queue's paused topics (partition 0's hash)."""
    return Command(("HGETALL", PartitionKeys(queue, 0).paused))


def events_command(queue: str) -> Command:
    """``HGET`` of the queue's events switch (partition 0's meta; every partition holds the
    same, docs/events.md#the-switch)."""
    return Command(("HGET", PartitionKeys(queue, 0).meta, "events"))


def parse_events(reply: Any) -> bool:
    """Whether the queue keeps events, from an ``events_command`` reply (a value that is not
    a number counts as off)."""
    value = text(reply) if reply is not None else "0"
    return value.isdigit() and int(value) > 0


def parse_paused(reply: Any) -> frozenset[str]:
    """The paused topics from an ``HGETALL`` reply of the paused hash."""
    return frozenset(field_map(reply))


def paused_plan(queue: str) -> Plan[frozenset[str]]:
    """The paused topics of the queue."""
    return parse_paused((yield paused_command(queue)))


def limits_command(queue: str) -> Command:
    """``HGETALL`` of the queue's limits (partition 0's hash)."""
    return Command(("HGETALL", limits_key(queue)))


def limits_plan(queue: str) -> Plan[dict[str, TopicLimit]]:
    """The limits of the queue's topics."""
    return parse_limits((yield limits_command(queue)))


def paused_flag(queue: str, topic: str) -> Command:
    """``HEXISTS``: whether ``topic`` is paused."""
    return Command(("HEXISTS", PartitionKeys(queue, 0).paused, topic))


def limit_of(queue: str, topic: str) -> Command:
    """``HGET``: ``topic``'s stored limit."""
    return Command(("HGET", limits_key(queue), topic))


def look_plan(queue: str, partitions: int, topic: str) -> Plan[tuple[bool, bool]]:
    """Whether ``topic`` is paused, and limited: one round trip (both in partition 0's slot,
    whatever the number of ``partitions``)."""
    del partitions  # kept for callers; limits hold on any number of partitions
    paused, raw = yield Commands((paused_flag(queue, topic), limit_of(queue, topic)))
    return (bool(int(paused)), is_limited(raw))


def is_paused_plan(queue: str, topic: str) -> Plan[bool]:
    """Whether ``topic`` is paused now."""
    return bool(int((yield paused_flag(queue, topic))))
