"""Record layouts and the fleet record, I/O-free (docs/keys.md#layouts, docs/keys.md#fleet).

The rule: a process never writes a layout that a live process of the queue cannot read. A new
queue starts on ``NEW_QUEUE_LAYOUT`` (what every release reads); a process that finds a layout
above ``HIGHEST_LAYOUT`` refuses the queue (``LayoutError``); ``migrate_plan`` is the one
explicit step up, and it first checks the live processes: the fleet record, where every
consumer of this release says which layouts it reads, and the consumers of the queue's groups
that are not in it (a process of an older release, which keeps no fleet record).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import validation
from ..base.errors import LayoutError
from . import streams
from .keys import PartitionKeys, partition_keys
from .plan import Command, Commands, Plan
from .replies import field_map, text
from .scripts import ScriptCall, script

LAYOUT_FIELD = "layout"  # of each partition's meta hash: what promoteDue writes
HIGHEST_LAYOUT = 2  # the highest layout this release reads (and the one migrate moves to)
NEW_QUEUE_LAYOUT = 1  # a queue this release creates: every release reads it
FLEET_TTL_S = 90.0  # an entry not renewed this long is not live (> SEEN_WITHIN_S + FLEET_EVERY_S)
FLEET_EVERY_S = 15.0  # how often a live consumer renews its entry
SEEN_WITHIN_S = 60.0  # migrate: a consumer that read within this window counts as live


def layout_of(raw: object, where: str) -> int:
    """The layout in a meta hash's ``layout`` field (absent: 1); a ``LayoutError`` naming the
    key when it is one this release cannot read (a newer release migrated the queue)."""
    if raw is None or raw == b"" or raw == "":
        return 1
    found = text(raw)
    if found.isdigit() and 1 <= int(found) <= HIGHEST_LAYOUT:
        return int(found)
    raise LayoutError(
        f"layout: queue key {where} says record layout {found!r}, which this release (layouts "
        f"1 to {HIGHEST_LAYOUT}) cannot read; it will not serve this queue. Run a release "
        f"that reads it (docs/operations.md#upgrading-a-running-queue)", field="layout")


def join_fleet_call(queue: str, consumer: str, info: str = "", info_ttl_s: float = 0.0
                    ) -> ScriptCall:
    """``joinFleet``: ``consumer`` is live and reads layouts up to ``HIGHEST_LAYOUT`` for the
    next ``FLEET_TTL_S``; with ``info`` (``workers.info_blob``) it also says what it is, live
    for ``info_ttl_s`` (docs/operations.md#workers). Its reply (partition 0's layout) goes
    through ``layout_of``."""
    keys = PartitionKeys(queue, 0)
    extra: list[str | int] = [info, int(info_ttl_s * 1000)] if info else []
    return script("joinFleet").call([keys.fleet, keys.meta, keys.workers],
                                    [consumer, HIGHEST_LAYOUT, int(FLEET_TTL_S * 1000), *extra])


@dataclass(frozen=True)
class Blocker:
    """A live process that cannot read the target layout, as ``migrate`` names it."""

    consumer: str
    why: str

    def __str__(self) -> str:
        return f"{self.consumer!r} ({self.why})"


def _live_fleet(reply: object, now_ms: int) -> dict[str, int]:
    """The fleet hash's live entries: consumer -> the highest layout it reads."""
    live: dict[str, int] = {}
    for name, value in field_map(reply).items():  # an HGETALL reply
        layout, _, until = value.partition("|")
        if until.isdigit() and int(until) >= now_ms and layout.isdigit():
            live[name] = int(layout)
    return live


def _consumers_plan(keys: PartitionKeys) -> Plan[list[tuple[str, str, int]]]:
    """Every consumer of every group on the partition's topic streams: (topic, name, idle ms)."""
    topics = yield Commands((Command(("HKEYS", keys.groups)), Command(("HKEYS", keys.counts))))
    found: list[tuple[str, str, int]] = []
    for topic in sorted({text(t) for reply in topics for t in reply}):
        stream = keys.stream(topic)
        if text((yield Command(("TYPE", stream)))) != "stream":
            continue
        for group in streams.info_rows((yield streams.info_groups(stream))):
            name = text(group["name"])
            for consumer in streams.info_rows((yield streams.info_consumers(stream, name))):
                found.append((topic, text(consumer["name"]), int(str(consumer["idle"]))))
    return found


def blockers_plan(queue: str, partitions: int, target: int, seen_within_s: float
                  ) -> Plan[list[Blocker]]:
    """The live processes that cannot read layout ``target``: fleet members that read less,
    and consumers that read within ``seen_within_s`` but are not live fleet members (a release
    before the fleet record, which reads layout 1 only). Read only."""
    zero = PartitionKeys(queue, 0)
    now = yield Command(("TIME",))  # alone: a cluster pipeline takes keyed commands only
    fleet = yield Command(("HGETALL", zero.fleet))
    live = _live_fleet(fleet, int(text(now[0])) * 1000 + int(text(now[1])) // 1000)
    blockers = [Blocker(name, f"a live process that reads layouts up to {layout}")
                for name, layout in sorted(live.items()) if layout < target]
    named = {b.consumer for b in blockers}
    for keys in partition_keys(queue, partitions):
        for topic, name, idle_ms in (yield from _consumers_plan(keys)):
            if name not in live and name not in named and idle_ms < seen_within_s * 1000:
                named.add(name)
                blockers.append(Blocker(name, f"read topic {topic!r} {idle_ms} ms ago "
                                              f"and keeps no fleet record: an older release"))
    return blockers


def migrate_plan(queue: str, partitions: int, seen_within_s: float = SEEN_WITHIN_S
                 ) -> Plan[list[int]]:
    """Move every partition to layout ``HIGHEST_LAYOUT`` (docs/operations.md#upgrading-a-
    running-queue); the layouts found before, per partition (1 where none was set).

    Checked first: a ``LayoutError`` naming every live process that cannot read the new layout
    (``blockers_plan``), and nothing written. Idempotent and safe while workers of this release
    run: from the next ``promoteDue`` call on a partition, jobs moved into their stream keep
    their body once; every script of this release reads both layouts. The caller runs the
    queue check first (``NoSuchQueue`` for a queue nobody has used).
    """
    seen_within_s = validation.seconds(seen_within_s, "seen_within", maximum=86400.0)
    before = []
    for keys in partition_keys(queue, partitions):
        before.append(layout_of((yield Command(("HGET", keys.meta, LAYOUT_FIELD))), keys.meta))
    if all(layout == HIGHEST_LAYOUT for layout in before):
        return before
    blockers = yield from blockers_plan(queue, partitions, HIGHEST_LAYOUT, seen_within_s)
    if blockers:
        raise LayoutError(
            f"layout: not moving queue {queue!r} to layout {HIGHEST_LAYOUT}: "
            f"{len(blockers)} live process(es) cannot read it: "
            f"{', '.join(str(b) for b in blockers)}; stop or upgrade them, then run migrate "
            f"again (docs/operations.md#upgrading-a-running-queue)", field="layout")
    for keys, layout in zip(partition_keys(queue, partitions), before, strict=True):
        if layout != HIGHEST_LAYOUT:
            yield Command(("HSET", keys.meta, LAYOUT_FIELD, HIGHEST_LAYOUT))
    return before
