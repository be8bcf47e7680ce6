"""Limits on a queue of several partitions (docs/limits.md#more-than-one-partition): a topic's
limit state (token bucket, leases, wake list) stays in partition 0's slot, so a take of a
limited topic on a partition p other than 0 is three single-slot steps:

1. ``acquireLimit`` (slot 0): up to ``wanted`` tokens and leases, nothing over the limit; the
   leases are unnamed (``~<grant>:<i>``) and expire after ``HOLD_MS`` unless named;
2. ``takeGranted`` (slot p): at most that many new entries, no limit check of its own;
3. ``nameLeases`` (slot 0): each entry's lease named ``<p>:<entry id>`` and set to expire
   after its job's ttr; unused leases and tokens handed back.

Every settle of such a delivery sends ``freeLeases`` (slot 0) next to its own call, and the
heartbeat ``touchLeases``: both are built here (``free_call``, ``touch_call``) and added by
``consume/core/settle_plans.py``'s plans (the Worker's and a reservation's). Partition 0's
deliveries
keep the one-script path (``takeLimited``, leases named by the entry id, freed by the settle
scripts themselves), and so does a queue of one partition: no extra round trip there.

``LeaseBook`` is what a worker remembers of the leases its deliveries hold in slot 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from secrets import token_hex
from typing import Any

from ...base.errors import StreamdelayError
from ...limits.limit_plans import DRAINED, GOT_ALL, parse_take
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Plan
from ...protocol.replies import text
from ...protocol.scripts import ScriptCall, script

HOLD_MS = 30_000  # an unnamed lease (between acquireLimit and nameLeases) expires after this
DEFAULT_TTR_MS = 60_000
TakeRow = tuple[str, dict[Any, Any]]  # entry id, fields


def member(partition: int, entry_id: str) -> str:
    """The lease member of a delivery of ``partition`` (not 0) in slot 0's ``leases:<topic>``."""
    return f"{partition}:{entry_id}"


def ttr_of(fields: dict[Any, Any] | None) -> int:
    """The ttr (ms) in a stream entry's record (``rec``, its 5th field); the default when it
    does not parse (the worker dead-letters such an entry: its lease is freed then)."""
    raw = (fields or {}).get(b"rec", (fields or {}).get("rec"))
    if isinstance(raw, str):
        raw = raw.encode()
    if not isinstance(raw, bytes):
        return DEFAULT_TTR_MS
    try:  # split the bytes: the blob after the header is binary (msgpack), never UTF-8 text
        return max(1, int(raw.split(b"|", 5)[4]))
    except (IndexError, ValueError):
        return DEFAULT_TTR_MS


def _zero(queue: str) -> tuple[str]:
    return (PartitionKeys(queue, 0).limits,)


def leased_take_plan(keys: PartitionKeys, group: str, consumer: str, topic: str, wanted: int,
                     second: Callable[[int], ScriptCall] | None = None
                     ) -> Plan[tuple[list[TakeRow], int, int, str, bool]]:
    """Take up to ``wanted`` new entries of the limited ``topic`` on ``keys``' partition (not
    0) under the limit kept in slot 0: (entries, reason, wait ms, last id, leased), the reason,
    wait and last id as ``takeLimited`` answers them; ``leased``: the entries hold leases
    (every settle frees them: ``free_call``). Entries that could not be given a lease (their
    grant expired before it was named and the limit is full again) are handed back here, not
    an attempt.

    ``second``: the read of step 2 for a grant of n (default ``takeGranted``); a staged
    topic's take gives ``takeStaged`` without the topic limit (``consume/core/staging.py``), whose
    reason 3 (nothing more can start now) comes back with its wait."""
    grant = f"{keys.partition}.{consumer}.{token_hex(6)}"
    zero = _zero(keys.queue)
    reply = yield script("acquireLimit").call(zero, [topic, wanted, grant, HOLD_MS])
    granted, reason, wait_ms, leased = (int(v) for v in reply)
    if granted <= 0:
        return [], reason, wait_ms, "", bool(leased)
    step = (second(granted) if second is not None else
            script("takeGranted").call(keys.script_keys(), [group, consumer, topic, granted]))
    try:
        taken = parse_take((yield step))
    except StreamdelayError:  # no group (deleted meanwhile): the leases go back at once
        yield script("nameLeases").call(zero, [topic, grant])
        raise
    names: list[Any] = []
    for eid, fields in taken.entries:
        names.extend((member(keys.partition, eid), ttr_of(fields)))
    unleased = {int(i) for i in (yield script("nameLeases").call(zero, [topic, grant, *names]))}
    entries = [row for i, row in enumerate(taken.entries, 1) if i not in unleased]
    if unleased:
        flat: list[str] = []
        for i in sorted(unleased):
            eid, fields = taken.entries[i - 1]
            job = (fields or {}).get(b"id", (fields or {}).get("id"))
            if job is not None:
                flat.extend((topic, text(job), eid))
        if flat:
            yield script("releaseJobs").call(keys.script_keys(), [group, *flat])
    if taken.reason == DRAINED:
        return entries, DRAINED, taken.wait_ms, taken.last_id, bool(leased)
    return entries, reason if granted < wanted else GOT_ALL, wait_ms, "", bool(leased)


def free_call(queue: str, pairs: Sequence[tuple[str, str]]) -> ScriptCall:
    """``freeLeases``: free the leases ``(topic, member)`` in slot 0 (a settle's second call)."""
    return script("freeLeases").call(_zero(queue), [v for pair in pairs for v in pair])


def touch_call(queue: str, triples: Sequence[tuple[str, str, int]]) -> ScriptCall:
    """``touchLeases``: move the leases ``(topic, member, ttr ms)`` on to ttr from now."""
    return script("touchLeases").call(_zero(queue), [v for row in triples for v in row])


class LeaseBook:
    """The deliveries of one worker that hold a lease in slot 0 (taken by
    ``leased_take_plan``), as ``(partition, topic, entry id)``: a settle frees their leases
    and forgets them, a heartbeat moves them on."""

    def __init__(self) -> None:
        self._held: set[tuple[int, str, str]] = set()

    def __len__(self) -> int:
        return len(self._held)

    def add(self, rows: Iterable[tuple[int, str, str]]) -> None:
        """Remember deliveries that hold a lease."""
        self._held.update(rows)

    def pop(self, partition: int, pairs: Iterable[tuple[str, str]], keep: bool = False
            ) -> list[tuple[str, str]]:
        """The ``(topic, member)`` of those of ``pairs`` (topic, entry id) of ``partition``
        that hold a lease, forgotten here (their settle frees them) unless ``keep`` (a settle
        that may be sent again: ``forget`` them once it succeeded)."""
        found = []
        for topic, eid in pairs:
            row = (partition, topic, eid)
            if row in self._held:
                if not keep:
                    self._held.discard(row)
                found.append((topic, member(partition, eid)))
        return found

    def forget(self, partition: int, pairs: Iterable[tuple[str, str]]) -> None:
        """Forget these deliveries' leases (their settle, with the free, succeeded)."""
        self._held.difference_update((partition, topic, eid) for topic, eid in pairs)

    def held(self, partition: int, topic: str, eid: str) -> bool:
        """Whether this delivery holds a lease in slot 0."""
        return (partition, topic, eid) in self._held


def triples_pairs(flat: Sequence[str]) -> list[tuple[str, str]]:
    """``(topic, entry id)`` of flat ``topic, job id, entry id`` triples."""
    return [(flat[i], flat[i + 2]) for i in range(0, len(flat), 3)]
