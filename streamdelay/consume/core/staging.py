"""Take of staged topics (docs/priorities.md), as plans every driver runs (the Worker's take
loop, a reserve round, so the HTTP consumers too).

A topic is staged once a job with a priority other than 5 or a fairness key was enqueued to it
(``sd:{Q#0}:staged``, read with the pause and the limits every ``REFRESH_S``). Its due jobs wait
in per-key lanes (priority with aging inside a lane, lanes in turns) and are taken only through
``takeStaged``, which also holds each key to the topic's key limit. The topic's own limit
(rate, concurrency: docs/limits.md) lives in partition 0's slot: ``takeStaged`` holds it itself
on partition 0 (every queue of one partition); on a partition p != 0 the take is the three
steps of ``leasing.leased_take_plan`` (acquire in slot 0, ``takeStaged`` of at most the grant
in slot p, name the leases in slot 0), as for a plain limited topic. When a take gives fewer
than asked the driver waits on the topic's ``stagewake`` list (pushed when jobs become ready or
a key lease is freed) or, held back by the topic's concurrency, on partition 0's ``limitwake``,
never longer than its block time nor than the reply's wait: a poll loop never runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...limits.limit_plans import CONCURRENCY, GOT_ALL, RATE, parse_take
from ...protocol.keys import PartitionKeys
from ...protocol.plan import Command, Plan
from ...protocol.replies import field_map
from ...protocol.scripts import ScriptCall, script
from . import leasing
from .taking import TIME, Entry, clock_ms, has_deadline

MAX_TAKE = 1000  # entries one takeStaged call may give (its ARGV bound)
def staged_command(queue: str) -> Command:
    """``HGETALL`` of the queue's staged topics (partition 0's hash)."""
    return Command(("HGETALL", PartitionKeys(queue, 0).staged))


def parse_staged(reply: Any) -> frozenset[str]:
    """The staged topics from an ``HGETALL`` reply of the staged hash."""
    return frozenset(field_map(reply))


def staged_flag(queue: str, topic: str) -> Command:
    """``HEXISTS``: whether ``topic`` is staged."""
    return Command(("HEXISTS", PartitionKeys(queue, 0).staged, topic))


def take_staged_call(keys: PartitionKeys, group: str, consumer: str, topic: str, count: int,
                     topic_limits: bool) -> ScriptCall:
    """The one ``takeStaged`` call: up to ``count`` ready jobs of ``topic`` for ``consumer`` in
    turns of their keys, none past a key limit; with ``topic_limits`` (partition 0, where the
    limit's state lives) also within the topic's own rate and concurrency."""
    return script("takeStaged").call(keys.script_keys(), [
        group, consumer, topic, max(1, min(count, MAX_TAKE)), "1" if topic_limits else "0"])


def staged_take_now_plan(keys: PartitionKeys, group: str, consumer: str, topic: str,
                         count: int, limited: bool
                         ) -> Plan[tuple[list[Entry], int, int]]:
    """One take of a staged topic: the entries, and the reason and wait (ms) for
    ``staged_wait_plan``. ``limited``: the topic has its own rate or concurrency, held by
    ``takeStaged`` itself on partition 0 and by the three steps of
    ``leasing.leased_take_plan`` on another partition (its entries hold leases in slot 0)."""
    if limited and keys.partition != 0:
        rows, reason, wait_ms, _, leased = yield from leasing.leased_take_plan(
            keys, group, consumer, topic, max(1, min(count, MAX_TAKE)),
            lambda granted: take_staged_call(keys, group, consumer, topic, granted, False))
        entries = [Entry(keys.partition, topic, eid, fields, leased) for eid, fields in rows]
    else:
        reply = parse_take((yield take_staged_call(keys, group, consumer, topic, count,
                                                   limited)))
        entries = [Entry(keys.partition, topic, eid, fields) for eid, fields in reply.entries]
        reason, wait_ms = reply.reason, reply.wait_ms
    if has_deadline(entries):  # the open step checks deadlines against the server clock
        now_ms = clock_ms((yield TIME))
        entries = [entry._replace(now_ms=now_ms) for entry in entries]
    return entries, reason, wait_ms


def staged_wait_plan(keys: Sequence[PartitionKeys], topic: str, reason: int, wait_ms: int,
                     block_ms: int) -> Plan[float]:
    """Wait as a take's reply says (nothing when it got all it wanted), at most ``block_ms``:
    on the ``stagewake`` lists of ``keys``' partitions or, when the topic's concurrency held
    back, on partition 0's ``limitwake`` (with partition 0's ``stagewake`` when it is one of
    ``keys``: one slot, so a cluster takes it). Returns the seconds the driver still sleeps (a
    rate's next token)."""
    if reason == GOT_ALL or block_ms <= 0:
        return 0.0
    wait = block_ms if wait_ms <= 0 else max(1, min(wait_ms, block_ms))
    if reason == RATE:
        return wait / 1000
    wake = [k.stage_wake(topic) for k in keys]
    if reason == CONCURRENCY:  # only a freed lease lets one start: it is pushed in slot 0
        wake = [k.stage_wake(topic) for k in keys if k.partition == 0]
        wake.append(PartitionKeys(keys[0].queue, 0).limit_wake(topic))
    yield Command(("BLPOP", *wake, f"{wait / 1000:.3f}"))
    return 0.0
