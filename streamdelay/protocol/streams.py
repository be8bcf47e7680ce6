"""Stream I/O in one place: every Redis stream command a plan sends is built here, and every
stream reply is read here, whatever the protocol (docs/design.md#stream-io).

Builders return a plan's ``Command`` (I/O-free: the runner sends it); readers turn the reply
redis-py gives into plain values. A URL may ask for RESP3 (``?protocol=3``,
docs/scale-out.md#urls): a stream reply then comes as maps where RESP2 has flat lists, and
redis-py 8's unified shapes (``legacy_responses=false``) differ again. The readers below accept
each, and the unit tests feed them replies recorded from a real server on every shape
(tests/unit/resp_recorded.py, tests/unit/test_streams.py). No other module of the package names
a stream command (tests/unit/test_stream_commands_here.py); the Lua scripts run their own (each
is one atomic state change, docs/keys.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .plan import Command
from .replies import text

NEW = ">"  # XREADGROUP: entries never delivered to the group


# --- reads --------------------------------------------------------------------------------

def read_group(group: str, consumer: str, streams: Sequence[str], count: int,
               block_ms: int | None = None, ids: Sequence[str] | None = None) -> Command:
    """``XREADGROUP GROUP group consumer COUNT n [BLOCK ms] STREAMS keys... ids...``: new
    entries (``>``) unless ``ids`` (a consumer's own pending list from those ids)."""
    head: tuple[Any, ...] = ("XREADGROUP", "GROUP", group, consumer, "COUNT", max(1, count))
    if block_ms is not None:
        head += ("BLOCK", max(1, block_ms))
    after = list(ids) if ids is not None else [NEW] * len(streams)
    return Command((*head, "STREAMS", *streams, *after))


def read(streams: Sequence[str], ids: Sequence[str], count: int,
         block_ms: int | None = None) -> Command:
    """``XREAD [BLOCK ms] COUNT n STREAMS keys... ids...``: the entries after each id (keys of
    one slot on a cluster; ``$`` waits for the next one added)."""
    block = ("BLOCK", block_ms) if block_ms is not None else ()
    return Command(("XREAD", *block, "COUNT", count, "STREAMS", *streams, *ids))


def entries_range(stream: str, start: str = "-", end: str = "+",
                  count: int | None = None) -> Command:
    """``XRANGE stream start end [COUNT n]``: oldest first."""
    return Command(("XRANGE", stream, start, end, *(("COUNT", count) if count else ())))


def entries_back(stream: str, end: str = "+", start: str = "-",
                 count: int | None = None) -> Command:
    """``XREVRANGE stream end start [COUNT n]``: newest first."""
    return Command(("XREVRANGE", stream, end, start, *(("COUNT", count) if count else ())))


def length(stream: str) -> Command:
    """``XLEN stream``."""
    return Command(("XLEN", stream))


# --- writes (tests, tools and recorders; the package writes through its scripts) ----------

def add(stream: str, fields: Mapping[str, Any], entry_id: str = "*",
        maxlen: int | None = None) -> Command:
    """``XADD stream [MAXLEN ~ n] id field value...``."""
    cap = ("MAXLEN", "~", maxlen) if maxlen is not None else ()
    return Command(("XADD", stream, *cap, entry_id,
                    *(part for pair in fields.items() for part in pair)))


def ack(stream: str, group: str, ids: Sequence[str]) -> Command:
    """``XACK stream group id...``."""
    return Command(("XACK", stream, group, *ids))


def delete(stream: str, ids: Sequence[str]) -> Command:
    """``XDEL stream id...``."""
    return Command(("XDEL", stream, *ids))


def trim(stream: str, maxlen: int | None = None, minid: str | None = None,
         approximate: bool = False) -> Command:
    """``XTRIM stream MAXLEN|MINID [~] bound`` (one of the two)."""
    if (maxlen is None) == (minid is None):
        raise ValueError("trim takes one of maxlen and minid")
    how, bound = ("MAXLEN", maxlen) if maxlen is not None else ("MINID", minid)
    return Command(("XTRIM", stream, how, *(("~",) if approximate else ()), bound))


# --- groups and their pending lists -------------------------------------------------------

def group_create(stream: str, group: str, entry_id: str = "$",
                 mkstream: bool = False) -> Command:
    """``XGROUP CREATE stream group id [MKSTREAM]``."""
    return Command(("XGROUP", "CREATE", stream, group, entry_id,
                    *(("MKSTREAM",) if mkstream else ())))


def group_destroy(stream: str, group: str) -> Command:
    """``XGROUP DESTROY stream group``."""
    return Command(("XGROUP", "DESTROY", stream, group))


def group_set_id(stream: str, group: str, entry_id: str) -> Command:
    """``XGROUP SETID stream group id``."""
    return Command(("XGROUP", "SETID", stream, group, entry_id))


def group_delete_consumer(stream: str, group: str, consumer: str) -> Command:
    """``XGROUP DELCONSUMER stream group consumer``."""
    return Command(("XGROUP", "DELCONSUMER", stream, group, consumer))


def pending_summary(stream: str, group: str) -> Command:
    """``XPENDING stream group``: how many, the id range, per consumer."""
    return Command(("XPENDING", stream, group))


def pending_range(stream: str, group: str, count: int, consumer: str | None = None,
                  start: str = "-", end: str = "+", min_idle_ms: int | None = None) -> Command:
    """``XPENDING stream group [IDLE ms] start end count [consumer]``: one row per entry."""
    idle = ("IDLE", min_idle_ms) if min_idle_ms is not None else ()
    return Command(("XPENDING", stream, group, *idle, start, end, count,
                    *((consumer,) if consumer is not None else ())))


def claim(stream: str, group: str, consumer: str, min_idle_ms: int, ids: Sequence[str],
          just_id: bool = False) -> Command:
    """``XCLAIM stream group consumer min-idle id... [JUSTID]``."""
    return Command(("XCLAIM", stream, group, consumer, min_idle_ms, *ids,
                    *(("JUSTID",) if just_id else ())))


def autoclaim(stream: str, group: str, consumer: str, min_idle_ms: int, start: str = "0-0",
              count: int = 100) -> Command:
    """``XAUTOCLAIM stream group consumer min-idle start COUNT n``."""
    return Command(("XAUTOCLAIM", stream, group, consumer, min_idle_ms, start, "COUNT", count))


def info_stream(stream: str) -> Command:
    """``XINFO STREAM stream``."""
    return Command(("XINFO", "STREAM", stream))


def info_groups(stream: str) -> Command:
    """``XINFO GROUPS stream``."""
    return Command(("XINFO", "GROUPS", stream))


def info_consumers(stream: str, group: str) -> Command:
    """``XINFO CONSUMERS stream group``."""
    return Command(("XINFO", "CONSUMERS", stream, group))


# --- what the runner needs to know of a stream command ------------------------------------

_READS = ("XREADGROUP", "XREAD")


def read_keys(args: Sequence[Any]) -> list[Any] | None:
    """The stream keys of an ``XREAD`` / ``XREADGROUP`` command (its name first), None for any
    other command: a cluster client routes a read by them (``io/clients.py``)."""
    if not args or text(args[0]).upper() not in _READS:
        return None
    upper = [text(a).upper() for a in args]
    if "STREAMS" not in upper:
        raise ValueError(f"{text(args[0])} without STREAMS: {args!r}")
    rest = list(args[upper.index("STREAMS") + 1:])
    return rest[:len(rest) // 2]


def reply_options(args: Sequence[Any]) -> dict[str, Any]:
    """redis-py's parse options for a stream command's reply where its default differs from
    what the command answers: the extended ``XPENDING`` (a range) gives one row per entry, a
    ``JUSTID`` claim ids only."""
    name = text(args[0]).upper() if args else ""
    if name == "XPENDING" and len(args) > 3:
        return {"parse_detail": True}
    if name == "XCLAIM" and "JUSTID" in args:
        return {"parse_justid": True}
    return {}


# --- the reply readers: RESP2, RESP3 and redis-py's unified shapes -------------------------

Fields = Any  # an entry's fields as redis-py gives them: a dict (bytes keys unless decoded)
StreamEntries = list[tuple[str, Fields]]  # (entry id, its fields)


def _fields(raw: Any) -> Fields:
    """An entry's fields: the dict redis-py's callback made, or a raw flat list as one."""
    if isinstance(raw, list):
        return {raw[i]: raw[i + 1] for i in range(0, len(raw) - 1, 2)}
    return raw


def _wrapped(value: Any) -> list[Any]:
    """A stream's entries in a read reply. redis-py's RESP3 callback wraps them in a list of
    one (``{key: [entries]}``); its unified shape and RESP2 do not. An entry is a pair (a tuple
    once parsed, a list when raw), never a list of pairs: that tells the wrapper."""
    if (isinstance(value, list) and len(value) == 1 and isinstance(value[0], list)
            and (not value[0] or isinstance(value[0][0], (list, tuple)))):
        return value[0]
    return list(value or ())


def entries(reply: Any) -> StreamEntries:
    """``(entry id, fields)`` of an ``XRANGE`` / ``XREVRANGE`` / ``XCLAIM`` reply, in its
    order; an entry deleted while pending (``(None, None)``, or an id without fields) is left
    out."""
    return [(text(row[0]), _fields(row[1])) for row in reply or ()
            if row is not None and row[0] is not None and row[1] is not None]


def read_reply(reply: Any) -> list[tuple[str, StreamEntries]]:
    """An ``XREAD`` / ``XREADGROUP`` reply as ``(stream key, [(entry id, fields)...])`` per
    stream, in the reply's order, whatever its shape: RESP2 ``[[key, entries]...]``, RESP3
    ``{key: [entries]}`` (or ``{key: entries}``), nothing read ``[]``, ``{}`` or None. An entry
    deleted while pending (``(None, None)``) is left out."""
    if not reply:
        return []
    rows = reply.items() if isinstance(reply, dict) else ((row[0], row[1]) for row in reply)
    return [(text(key), [(text(eid), _fields(fields)) for eid, fields in _wrapped(found)
                         if eid is not None])
            for key, found in rows]


def info_row(reply: Any) -> dict[str, Any]:
    """One ``XINFO GROUPS`` / ``XINFO CONSUMERS`` row, or an ``XINFO STREAM`` reply, by field
    name: a flat name/value list on RESP2, a map on RESP3; values as redis-py gives them."""
    if isinstance(reply, dict):
        return {text(k): v for k, v in reply.items()}
    items = list(reply) if isinstance(reply, (list, tuple)) else []
    return {text(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}


def info_rows(reply: Any) -> list[dict[str, Any]]:
    """Every row of an ``XINFO GROUPS`` / ``XINFO CONSUMERS`` reply (see ``info_row``)."""
    return [info_row(row) for row in reply or ()]


class StreamInfo(NamedTuple):
    """An ``XINFO STREAM`` reply: how many entries and groups, the last id given, and the
    first and last entries (None when empty)."""

    length: int
    groups: int
    last_id: str
    first: tuple[str, Fields] | None
    last: tuple[str, Fields] | None


def _entry(raw: Any) -> tuple[str, Fields] | None:
    """One ``(id, fields)`` pair of an ``XINFO STREAM`` reply: raw (a flat field list) on the
    lean asyncio path, parsed by redis-py's callback on the others."""
    if not raw or raw[0] is None:
        return None
    return text(raw[0]), _fields(raw[1])


def stream_info(reply: Any) -> StreamInfo:
    """An ``XINFO STREAM`` reply, whatever its shape (a flat list, a map)."""
    row = info_row(reply)
    return StreamInfo(int(row["length"]), int(row["groups"]), text(row["last-generated-id"]),
                      _entry(row.get("first-entry")), _entry(row.get("last-entry")))


class Pending(NamedTuple):
    """One row of the extended ``XPENDING`` reply."""

    entry_id: str
    consumer: str
    idle_ms: int
    deliveries: int


def pending_rows(reply: Any) -> list[Pending]:
    """The rows of an extended ``XPENDING`` reply: redis-py's maps (``parse_detail``) or the
    raw ``[id, consumer, idle, deliveries]`` rows."""
    found = []
    for row in reply or ():
        if isinstance(row, dict):
            row = (row["message_id"], row["consumer"], row["time_since_delivered"],
                   row["times_delivered"])
        found.append(Pending(text(row[0]), text(row[1]), int(row[2]), int(row[3])))
    return found


class PendingSummary(NamedTuple):
    """The summary ``XPENDING`` reply: how many, the id range, how many per consumer."""

    total: int
    first: str | None
    last: str | None
    consumers: dict[str, int]


def pending_summary_of(reply: Any) -> PendingSummary:
    """The summary ``XPENDING`` reply: redis-py's map, or the raw
    ``[count, first, last, [[consumer, n]...]]``."""
    if isinstance(reply, dict):
        per = {text(c["name"]): int(c["pending"]) for c in reply.get("consumers") or ()}
        first, last = reply.get("min"), reply.get("max")
        return PendingSummary(int(reply["pending"]), None if first is None else text(first),
                              None if last is None else text(last), per)
    count, first, last, rows = reply
    return PendingSummary(int(count), None if first is None else text(first),
                          None if last is None else text(last),
                          {text(c): int(n) for c, n in rows or ()})


class Autoclaimed(NamedTuple):
    """An ``XAUTOCLAIM`` reply: where to go on (``0-0``: the end), the entries claimed, the
    ids deleted meanwhile (Redis 7). (No ``JUSTID`` builder: redis-py's reader of that form
    drops the cursor.)"""

    cursor: str
    claimed: StreamEntries
    deleted: list[str]


def autoclaimed(reply: Any) -> Autoclaimed:
    """An ``XAUTOCLAIM`` reply, ``[cursor, entries, deleted ids]``."""
    cursor, found, *rest = reply
    return Autoclaimed(text(cursor), entries(found),
                       [text(eid) for eid in (rest[0] if rest else ()) or ()])


def claimed_ids(reply: Any) -> list[str]:
    """The ids of an ``XCLAIM ... JUSTID`` reply."""
    return [text(eid) for eid in reply or ()]


def integer(reply: Any) -> int:
    """The count an ``XLEN`` / ``XACK`` / ``XDEL`` / ``XTRIM`` / ``XGROUP DESTROY`` /
    ``DELCONSUMER`` answers."""
    return int(reply or 0)


def ok(reply: Any) -> bool:
    """Whether an ``XGROUP CREATE`` / ``SETID`` answered OK (``OK``, or redis-py's True)."""
    return reply is True or text(reply) == "OK"
