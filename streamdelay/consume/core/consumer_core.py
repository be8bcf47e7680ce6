"""The consumer core (docs/design.md#the-consumer-core): the one object every consumer driver
holds, and the one hand-back.

``ConsumerCore`` owns what a consumer decides whatever drives it: what it knows of its topics'
routes (``routing.Routes``: paused, limited, staged; the Worker's watches write it, a reserve
round's look writes one topic into it), the acting on a route (``sort``: which entries a read
or a take returned run, which go back), the partition rotation (``rotation``), the groups it
bound (``registered``) and its upkeep schedule (``due`` / ``ran`` on the process's one
``Cadence``). A driver adds only what is its own: the Worker its slots, handler runner and
loops; ``q.reserve`` its receipts; an HTTP consumer its transport (through ``q.reserve``).

``take_now`` / ``take_wait`` are the take of a staged or limited route on one partition and the
wait after it, whatever drives them. ``hand_back_calls`` / ``hand_back_plan`` give entries a
driver must not run now (their topic was paused, limited or staged since the read; over a
reserve's count; no key to sign them; a worker's at shutdown, at once or ``later_ms``) back to
their streams, not an attempt: one ``releaseJobs`` per partition and their leases in partition
0's slot freed in the same round trip. I/O-free: the drivers run the plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from .routing import STAGED, Route, Routes
from .staging import staged_take_now_plan, staged_wait_plan
from .taking import Entry, take_now_plan, wait_plan

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


def is_job(entry: Entry) -> bool:
    """Whether ``entry`` names a job (its ``id`` field): only a job's entry is handed back;
    any other is opened, and goes dead at once (``ConsumerCore.sort``)."""
    fields = entry.fields or {}
    return b"id" in fields or "id" in fields


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


def hand_back_calls(queue: str, group: str, rows: Iterable[Back], later_ms: int = 0
                    ) -> list[ScriptCall]:
    """THE hand-back of every driver: one ``releaseJobs`` per partition (at once, to the tail
    of the stream, not an attempt; ``later_ms``: ``releaseJobsLater``, due that long from
    now, a worker process whose def handler threads outlived its shutdown), then one
    ``freeLeases`` of those holding a lease; the release calls come first, partition by
    partition."""
    return _hand_back(queue, {group: rows}, later_ms)[0]


def _hand_back(queue: str, groups: Mapping[str, Iterable[Back]], later_ms: int
               ) -> tuple[list[ScriptCall], list[int]]:
    """The hand-back calls of rows of one or more groups (one release per group and
    partition, one ``freeLeases`` of them all), and the partition of each release."""
    calls: list[ScriptCall] = []
    parts: list[int] = []
    frees: list[tuple[str, str]] = []
    for group, rows in groups.items():
        for partition, batch in by_partition(rows, _partition).items():
            flat: list[str] = []
            for row in batch:
                flat.extend((row.topic, row.job_id, row.entry_id))
                if row.leased:
                    frees.append((row.topic, leasing.member(partition, row.entry_id)))
            calls.append(release_call(PartitionKeys(queue, partition), group, flat, later_ms))
            parts.append(partition)
    if frees:
        calls.append(leasing.free_call(queue, frees))
    return calls, parts


def hand_back_outcomes(queue: str, groups: Mapping[str, Iterable[Back]], later_ms: int = 0
                       ) -> Plan[list[tuple[int, int | BaseException]]]:
    """Hand rows of one or more groups back in one round trip (``hand_back_calls``); per
    release call, its partition and how many it handed back (still current), or the error
    it was refused with (its jobs return after their ttr). A failed free is not reported:
    its leases expire with their ttr."""
    calls, parts = _hand_back(queue, groups, later_ms)
    if not calls:
        return []
    replies = yield EachCall(tuple(calls))
    return [(partition, reply if isinstance(reply, BaseException) else int(reply))
            for partition, reply in zip(parts, replies[:len(parts)], strict=True)]


def hand_back_apart(queue: str, group: str, rows: Sequence[Back], later_ms: int = 0
                    ) -> list[tuple[list[Back], Plan[list[tuple[int, int | BaseException]]]]]:
    """The hand-back of ``rows`` as plans a driver runs side by side, each bounded on its own
    (a Cluster, whose partitions live on different nodes: a node down fails its partitions
    only, and those another node handed back are reported, not retried with the others): one
    ``hand_back_outcomes`` per partition, then the ``freeLeases`` of those holding a lease
    apart (partition 0's node down fails only the frees: the leases expire with their ttr).
    Each comes with the rows whose release it reports (none for the frees)."""
    apart: list[tuple[list[Back], Plan[list[tuple[int, int | BaseException]]]]] = [
        (batch, hand_back_outcomes(queue, {group: [row._replace(leased=False)
                                                   for row in batch]}, later_ms))
        for batch in by_partition(rows, _partition).values()]
    frees = [(row.topic, leasing.member(row.partition, row.entry_id))
             for row in rows if row.leased]
    if frees:
        apart.append(([], _free_plan(leasing.free_call(queue, frees))))
    return apart


def _free_plan(call: ScriptCall) -> Plan[list[tuple[int, int | BaseException]]]:
    """The leases' free alone (``hand_back_apart``): it reports no release."""
    yield EachCall((call,))
    return []


def hand_back_plan(queue: str, group: str, rows: Sequence[Back], later_ms: int = 0
                   ) -> Plan[int]:
    """Hand ``rows`` back in one round trip (``hand_back_outcomes``); how many were still
    current. A release a server refused is left to the reclaim after its ttr; a failed free
    expires with its lease's ttr."""
    outcomes = yield from hand_back_outcomes(queue, {group: rows}, later_ms)
    return sum(n for _, n in outcomes if not isinstance(n, BaseException))


class Took(NamedTuple):
    """What one take on one partition gave: its entries, why it gave no more (``GOT_ALL``,
    ``RATE``, ``CONCURRENCY``, ``DRAINED``: ``limits/limit_plans.py``), how long to wait (ms)
    and, for a limited topic's, the group's last delivered id (the wait for a new entry)."""

    entries: list[Entry]
    reason: int
    wait_ms: int
    last_id: str = ""


def take_now(found: Route, keys: PartitionKeys, group: str, consumer: str, topic: str,
             count: int, limited: bool = False) -> Plan[Took]:
    """THE take of a route whose jobs come by a take (``routing.TAKES``), on one partition,
    never blocking, for every driver (the Worker's take loop, a reserve round): a staged topic
    through ``takeStaged`` (``limited``: its own rate or concurrency checked there too), a
    limited one through ``takeLimited`` (on a partition p != 0 leased in partition 0's slot
    first: ``taking.take_now_plan``). The plain route's read is each driver's own
    ``XREADGROUP``: its blocking shape is the driver's (docs/design.md#the-consumer-core)."""
    if found == STAGED:
        entries, reason, wait_ms = yield from staged_take_now_plan(keys, group, consumer, topic,
                                                                   count, limited)
        return Took(entries, reason, wait_ms)
    return Took(*(yield from take_now_plan(keys, group, consumer, topic, count)))


def take_wait(found: Route, keys: Sequence[PartitionKeys], topic: str, took: Took,
              block_ms: int) -> Plan[float]:
    """THE wait after a take (``take_now``) gave fewer than wanted, as its reply says (a
    token, a freed lease, a new job), never longer than ``block_ms``; the seconds the driver
    still rests (a rate's next token). A staged topic waits on the wake lists of every
    partition of ``keys``, a limited one on the first's stream or its limit's slot."""
    if found == STAGED:
        return (yield from staged_wait_plan(list(keys), topic, took.reason, took.wait_ms,
                                            block_ms))
    return (yield from wait_plan(keys[0], topic, took.reason, took.wait_ms, took.last_id,
                                 block_ms))


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
        paused, limited or staged since: ``routing.runs``).

        An entry that is not a job's (no ``id``: a foreign client's) is never handed back,
        whatever the route: it runs, i.e. the driver's open step dead-letters it at once with
        its reason, logged and counted ``dropped`` (docs/security.md#garbage-from-other-
        clients), the same in every driver; left pending, only the reclaim would clean it,
        unseen."""
        routes = self.routes
        if not entries or not (routes.paused or routes.limited or routes.staged):
            return list(entries), []
        run, back = routes.split(entries, _topic, taken)
        if back and not all(map(is_job, back)):
            run.extend(entry for entry in back if not is_job(entry))
            back = [entry for entry in back if is_job(entry)]
        return run, back

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

