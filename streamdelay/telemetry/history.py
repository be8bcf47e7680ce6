"""The dashboard's totals and longer throughput window (docs/dashboard.md#totals).

The same 5 s ``recordLateness`` flush that writes the per-minute throughput also adds each
settled count (``ok``, ``retried``, ``dead``, all topics together) to a per-day hash of the
queue (per minute and per hour fields, kept 7 days: the script sets its expiry and deletes the
day hash past it) and to a totals hash of three fields. No new write, no round trip per job.
``history_plan`` reads a window of it back (``readHistory``, read only) with the totals and
today's counts; ``server_plan`` reads Redis's version and memory (``INFO``, one round trip).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command, Commands, Plan
from ..protocol.scripts import script

HISTORY_DAYS = 7  # how long the per-day hashes are kept (lua/recordLateness-1.lua)
# the dashboard's windows: name -> (points, minutes per point)
WINDOWS: dict[str, tuple[int, int]] = {
    "15m": (15, 1), "1h": (60, 1), "24h": (288, 5), "7d": (168, 60)}


@dataclass(frozen=True)
class Counts:
    """Deliveries settled: ``ok`` (acknowledged), ``retried``, ``dead``."""

    ok: int = 0
    retried: int = 0
    dead: int = 0

    @property
    def processed(self) -> int:
        """Every delivery settled, as Sidekiq's "processed" (failed attempts included)."""
        return self.ok + self.retried + self.dead

    @property
    def failed(self) -> int:
        """The deliveries that failed (retried or dead), as Sidekiq's "failed"."""
        return self.retried + self.dead


@dataclass(frozen=True)
class History:
    """A queue's totals, today's counts (UTC day, server clock) and a window of points, oldest
    first, each ``step`` minutes long."""

    now: int
    step: int
    total: Counts
    today: Counts
    points: tuple[Counts, ...]

    def series(self) -> dict[str, list[int]]:
        """The points as the throughput chart's series (``ok``, ``retried``, ``dead``)."""
        return {"ok": [p.ok for p in self.points], "retried": [p.retried for p in self.points],
                "dead": [p.dead for p in self.points]}


def _counts(flat: Any) -> Counts:
    ok, retried, dead = (int(v) for v in flat)
    return Counts(ok, retried, dead)


def history_plan(queue: str, window: str = "15m") -> Plan[History]:
    """Read ``queue``'s totals and the throughput ``window`` (a key of ``WINDOWS``)."""
    if window not in WINDOWS:
        raise ValueError(f"window: {window!r} is not one of {', '.join(WINDOWS)}")
    points, step = WINDOWS[window]
    reply = yield script("readHistory").call([PartitionKeys(queue, 0).lateness], [points, step])
    flat = [int(v) for v in reply[3]]
    return History(int(reply[0]), step, _counts(reply[1]), _counts(reply[2]),
                   tuple(_counts(flat[i:i + 3]) for i in range(0, len(flat), 3)))


@dataclass(frozen=True)
class ServerInfo:
    """What the dashboard shows of the Redis server."""

    version: str
    used_memory: str  # human, e.g. "1.52M"
    peak_memory: str
    maxmemory: str  # "0" when unlimited (Redis's own figure)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def info_fields(reply: Any) -> dict[str, str]:
    """The fields of an ``INFO`` reply: raw text, or a client's parsed dict; a Cluster
    client's reply per node (a dict of dicts): the first node's."""
    if isinstance(reply, dict):
        first = next(iter(reply.values()), None)
        if isinstance(first, dict):  # per node
            return info_fields(first)
        return {_text(k): _text(v) for k, v in reply.items()}
    fields = {}
    for line in _text(reply).splitlines():
        name, sep, value = line.partition(":")
        if sep and not line.startswith("#"):
            fields[name.strip()] = value.strip()
    return fields


def server_plan() -> Plan[ServerInfo]:
    """Redis's version and memory: ``INFO server`` and ``INFO memory`` in one round trip (on a
    Cluster, one node's: redis-py sends ``INFO`` to its default node, docs/dashboard.md#totals)."""
    server, memory = yield Commands((Command(("INFO", "server")), Command(("INFO", "memory"))))
    found = {**info_fields(server), **info_fields(memory)}
    return ServerInfo(found.get("redis_version", "?"), found.get("used_memory_human", "?"),
                      found.get("used_memory_peak_human", "?"),
                      found.get("maxmemory_human", found.get("maxmemory", "?")))
