"""The consumer core (docs/design.md#the-consumer-core): the one object every consumer driver
holds, and the one hand-back.

``ConsumerCore`` owns what a consumer decides whatever drives it: what it knows of its topics'
routes (``routing.Routes``: paused, limited, staged; the Worker's watches write it, a reserve
round's look writes one topic into it), the acting on a route (``sort``: which entries a read
or a take returned run, which go back), the partition rotation (``rotation``), the groups it
bound (``registered``) and its upkeep schedule (``due`` / ``ran`` on the process's one
``Cadence``). A driver adds only what is its own: the Worker its slots, handler runner and
loops; ``q.reserve`` its receipts; an HTTP consumer its transport (through ``q.reserve``).

``hand_back_calls`` / ``hand_back_plan`` give entries a driver must not run now (their topic
was paused, limited or staged since the read; over a reserve's count; no key to sign them)
back to their streams, not an attempt: one ``releaseJobs`` per partition and their leases in
partition 0's slot freed in the same round trip. I/O-free: the drivers run the plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from ...protocol.batching import by_partition
from ...protocol.deliveries import release_call
from ...protocol.keys import PartitionKeys
from ...protocol.plan import EachCall, Plan
from ...protocol.replies import text
from ...protocol.scripts import ScriptCall
from . import leasing
from .cadence import Cadence, process_cadence
from .constants import REFRESH_S
from .routing import Route, Routes
from .taking import Entry

REMEMBERED = 4096  # topics whose next look is kept (a reserve caller of many topics)


class Back(NamedTuple):
    """One delivery to hand back: where it is, its job, and whether it holds a lease in
    partition 0's slot (``leasing.py``)."""

    partition: int
    topic: str
    job_id: str
    entry_id: str
    leased: bool = False


def back_of(entry: Entry, leased: bool | None = None) -> Back | None:
    """The hand-back of a read's or a take's ``entry``; None for an entry that is not a job's
    (no ``id``: the driver's open step dead-letters it). ``leased``: the driver's own
    knowledge of its lease (default: the entry's)."""
    raw = (entry.fields or {}).get(b"id", (entry.fields or {}).get("id"))
    if raw is None:
        return None
    return Back(entry.partition, entry.topic, text(raw), entry.entry_id,
                entry.leased if leased is None else leased)


def backs(entries: Iterable[Entry]) -> tuple[list[Back], list[Entry]]:
    """The hand-backs of ``entries``, and those of them that are not a job's entry (the
    driver opens them: they go dead, whatever the route)."""
    rows: list[Back] = []
    others: list[Entry] = []
    for entry in entries:
        row = back_of(entry)
        if row is None:
            others.append(entry)
        else:
            rows.append(row)
    return rows, others


def hand_back_calls(queue: str, group: str, rows: Iterable[Back]) -> list[ScriptCall]:
    """THE hand-back of every driver: one ``releaseJobs`` per partition (at once, to the tail
    of the stream, not an attempt), then one ``freeLeases`` of those holding a lease; the
    release calls come first, partition by partition."""
    calls: list[ScriptCall] = []
    frees: list[tuple[str, str]] = []
    for partition, batch in by_partition(rows, _partition).items():
        flat: list[str] = []
        for row in batch:
            flat.extend((row.topic, row.job_id, row.entry_id))
            if row.leased:
                frees.append((row.topic, leasing.member(partition, row.entry_id)))
        calls.append(release_call(PartitionKeys(queue, partition), group, flat))
    if frees:
        calls.append(leasing.free_call(queue, frees))
    return calls


def hand_back_plan(queue: str, group: str, rows: Sequence[Back]) -> Plan[int]:
    """Hand ``rows`` back in one round trip (``hand_back_calls``); how many were still
    current. A release a server refused is left to the reclaim after its ttr; a failed free
    expires with its lease's ttr."""
    calls = hand_back_calls(queue, group, rows)
    if not calls:
        return 0
    replies = yield EachCall(tuple(calls))
    return sum(int(reply) for reply, call in zip(replies, calls, strict=True)
               if call.script.name == "releaseJobs" and not isinstance(reply, BaseException))


def _partition(row: Back) -> int:
    return row.partition


def _topic(entry: Entry) -> str:
    return entry.topic


@dataclass
class ConsumerCore:
    """What one consumer (a Worker, or a queue object's reserve calls) holds of the core."""

    site: str  # where its upkeep is scheduled (cadence.site_of: url and queue)
    routes: Routes = field(default_factory=Routes)  # the Worker's are its TopicViews
    cadence: Cadence = field(default_factory=process_cadence)  # one per process
    registered: set[tuple[str, str]] = field(default_factory=set)  # (group, topic) bound
    turn: int = 0  # the partition a round starts at, in turns
    known: set[str] = field(default_factory=set)  # topics whose route a look found
    next_look: dict[str, float] = field(default_factory=dict)  # topic -> monotonic s

    def rotation(self, parts: Sequence[PartitionKeys]) -> list[PartitionKeys]:
        """THE partition order of a round, whatever it takes (a plain read, a limited or a
        staged take): every partition, starting one further each round, so no partition's
        backlog waits behind another's (docs/scale-out.md)."""
        start = self.turn % len(parts)
        self.turn += 1
        return [*parts[start:], *parts[:start]]

    def learn(self, topic: str, paused: bool, limited: bool, staged: bool | None = None
              ) -> Route:
        """What a look found of ``topic`` (``staged`` None: not looked at, the last answer
        stands), written into the routes; its route now."""
        self.known.add(topic)
        return self.routes.learn(topic, paused, limited, staged)

    def known_plain(self, topic: str) -> bool:
        """Whether the last look found ``topic`` plain (a reserve's one-round-trip read)."""
        return topic in self.known and self.routes.of(topic) == "plain"

    def forget(self, topic: str) -> None:
        """The route of ``topic`` is looked at again before the next read."""
        self.known.discard(topic)

    def sort(self, entries: Sequence[Entry], taken: bool = False
             ) -> tuple[list[Entry], list[Entry]]:
        """THE acting on a route: of the entries a plain read (or a take: ``taken``)
        returned, those that run and those that go back to their streams (their topic was
        paused, limited or staged since: ``routing.runs``)."""
        routes = self.routes
        if not entries or not (routes.paused or routes.limited or routes.staged):
            return list(entries), []
        return routes.split(entries, _topic, taken)

    def look_due(self, topic: str, now: float) -> bool:
        """Whether a round looks at ``topic``'s staged flag now (every ``REFRESH_S``)."""
        if now < self.next_look.get(topic, 0.0):
            return False
        if len(self.next_look) >= REMEMBERED:
            self.next_look.clear()
        self.next_look[topic] = now + REFRESH_S
        return True

    def due(self, duty: str, scope: tuple[str, ...], now: float, every: float,
            first: float = 0.0) -> bool:
        """Whether ``duty`` of ``scope`` is due (the process's cadence, at this site)."""
        return self.cadence.due(duty, self.site, scope, now, every, first)

    def ran(self, duty: str, scopes: Iterable[tuple[str, ...]], now: float, every: float
            ) -> None:
        """This consumer ran ``duty`` for ``scopes`` on its own schedule (the Worker's
        reclaim): nobody else in the process runs it before ``every`` has passed."""
        for scope in scopes:
            self.cadence.ran(duty, self.site, scope, now, every)

