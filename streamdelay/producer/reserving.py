"""The pull API's sans-I/O core: reserve rounds and the ack / fail / touch plans (receipts:
``receipts.py``).

A reservation follows exactly the rules of a worker's delivery (docs/pull.md): it is read from
the topic stream by a member of the consumer group (``XREADGROUP``), decoded and dead-lettered
like a worker does (``protocol/deliveries.py``), acknowledged by ``ackJobs``, failed by
``failJob`` with the job's backoff, heartbeated by ``touchJobs``, and reclaimed after its ttr by
``requeueStuck`` (the worker's reclaim plan, which ``reserve`` also runs for its group at most
once a second per topic before reading). ``sync`` and ``async`` faces (``pull.py``) drive these
plans.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from secrets import token_hex
from typing import Any

from ..base import validation
from ..base.errors import GroupNotFound, StaleReceipt, StreamdelayError, ValidationError
from ..base.models import BackoffPolicy, Job
from ..limits.plans import CONCURRENCY, DRAINED, RATE, limits_key, parse_take, take_call
from ..limits.rates import TopicLimit
from ..protocol.backoff import failure_delay_ms
from ..protocol.deliveries import (
    ERROR_TEXT_LIMIT,
    ack_call,
    fail_call,
    open_entry,
    release_call,
    touch_call,
)
from ..protocol.keys import PartitionKeys, partition_keys
from ..protocol.layouts import FLEET_EVERY_S, join_fleet_call, layout_of
from ..protocol.plan import Command, Commands, Plan
from ..protocol.replies import parse_fail, text, texts
from ..protocol.results import encode_result
from ..protocol.scripts import Arg, ScriptCall, script
from ..redis_io.config import QueueConfig
from .pausing import paused_key
from .plans import PRUNE_IDLE_S, prune_consumers_plan, requeue_stuck_plan
from .receipts import (
    RECEIPT_VERSION,
    Receipt,
    ReceiptKey,
    bounded,
    check_receipt_plan,
    encode_receipt,
    signed,
    signing_key_plan,
)

DEFAULT_GROUP = "workers"  # the group a Worker joins unless told otherwise
MAX_WAIT_S = 30.0
MAX_COUNT = 100
READ_SLICE_S = 1.0  # longest single blocking read: a pause is seen within about a second
CLUSTER_SLICE_S = 0.25  # a cluster blocks on one partition at a time, in turns
RECLAIM_EVERY_S = 1.0  # like a worker's reclaim_interval
PRUNE_EVERY_S = 60.0  # like a worker's prune pass
FLEET_REMEMBERED = 4096  # consumers whose fleet renewal time is kept (the expired ones go first)


def default_consumer_name() -> str:
    """``host-pid-random``: unique per process, readable in XINFO and logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{token_hex(2)}"


@dataclass(frozen=True)
class ReserveArgs:
    """Validated arguments of one ``reserve`` call."""

    topic: str
    group: str
    consumer: str
    wait: float
    count: int


def reserve_args(topic: object, group: object, consumer: object, wait: object, count: object
                 ) -> ReserveArgs:
    """Check ``reserve``'s arguments, each error naming its field."""
    return ReserveArgs(validation.topic(topic), validation.group(group),
                       validation.consumer(consumer),
                       validation.seconds(wait, "wait", maximum=MAX_WAIT_S),
                       validation.positive_int(count, "count", MAX_COUNT))


@dataclass
class ReserveState:
    """What one queue object remembers between reserve calls (in memory, per process)."""

    registered: set[tuple[str, str]] = field(default_factory=set)  # (group, topic)
    next_reclaim: dict[tuple[str, str], float] = field(default_factory=dict)  # monotonic s
    next_prune: dict[tuple[str, str], float] = field(default_factory=dict)
    next_fleet: dict[str, float] = field(default_factory=dict)  # consumer -> monotonic s
    turn: int = 0  # the partition a round starts at, in turns
    rest_s: float = 0.0  # set by a limited read held back by the rate: sleep this long
    plain: set[str] = field(default_factory=set)  # topics last found neither paused nor limited
    key: ReceiptKey = field(default_factory=ReceiptKey)  # signs the receipts (receipts.py)


@dataclass(frozen=True)
class Reserved:
    """One delivery a reserve round took: the decoded job and its receipt (and as text)."""

    job: Job
    receipt: Receipt
    text: str


@dataclass(frozen=True)
class Round:
    """What one reserve round found: deliveries, whether the topic is paused, and the entries
    it dead-lettered because they can never run (job id, why)."""

    reserved: list[Reserved]
    paused: bool = False
    dropped: list[tuple[str, str]] = field(default_factory=list)
    rest_s: float = 0.0  # the rate limit holds the topic back: the caller sleeps this long


Entry = tuple[int, str, dict[Any, Any] | None]  # partition, entry id, fields


def _register_plan(cfg: QueueConfig, group: str, topic: str) -> Plan[None]:
    """Bind ``topic`` to ``group`` and create the group on every partition (``registerGroup``,
    as a worker does when it starts: a topic served by another group raises ConfigError)."""
    calls = [script("registerGroup").call(k.script_keys(), [group, topic])
             for k in partition_keys(cfg.name, cfg.partitions)]
    yield calls if len(calls) > 1 else calls[0]


def upkeep_plan(cfg: QueueConfig, state: ReserveState, args: ReserveArgs, now: float
                ) -> Plan[int]:
    """Register the group once, then (at most every ``RECLAIM_EVERY_S`` per group and topic)
    re-queue deliveries idle past their ttr and (every ``PRUNE_EVERY_S``) remove consumers gone
    for an hour: a worker's reclaim and prune passes (docs/pull.md, "Who reclaims"). Returns
    how many deliveries were re-queued or went dead."""
    key = (args.group, args.topic)
    if key not in state.registered:
        yield from _register_plan(cfg, args.group, args.topic)
        state.registered.add(key)
    if now >= state.next_fleet.get(args.consumer, 0.0):  # before its read: docs/keys.md#fleet
        if len(state.next_fleet) >= FLEET_REMEMBERED:
            state.next_fleet = {c: t for c, t in state.next_fleet.items() if t > now}
        state.next_fleet[args.consumer] = now + FLEET_EVERY_S
        layout_of((yield join_fleet_call(cfg.name, args.consumer)),
                  PartitionKeys(cfg.name, 0).meta)
    moved = 0
    if now >= state.next_reclaim.get(key, 0.0):
        state.next_reclaim[key] = now + RECLAIM_EVERY_S
        for keys in partition_keys(cfg.name, cfg.partitions):
            try:
                replies = yield from requeue_stuck_plan(keys, args.group, args.topic, -1, "")
            except GroupNotFound:  # the stream or group was deleted: register again
                yield from _register_plan(cfg, args.group, args.topic)
                continue
            moved += sum(len(reply.moved) + len(reply.dead) for reply in replies)
    if now >= state.next_prune.setdefault(key, now + PRUNE_EVERY_S):
        state.next_prune[key] = now + PRUNE_EVERY_S
        for keys in partition_keys(cfg.name, cfg.partitions):
            yield from prune_consumers_plan(keys, args.group, args.topic,
                                            int(PRUNE_IDLE_S * 1000))
    return moved


def _entries(reply: Any, by_stream: dict[str, int]) -> list[Entry]:
    """The entries of an XREADGROUP reply as (partition, entry id, fields)."""
    found: list[Entry] = []
    rows = reply.items() if isinstance(reply, dict) else (reply or [])
    for stream, entries in rows:
        partition = by_stream[text(stream)]
        found.extend((partition, text(eid), fields) for eid, fields in entries)
    return found


def _xreadgroup(args: ReserveArgs, count: int, block_ms: int | None,
                keys: list[PartitionKeys]) -> Command:
    head: tuple[Any, ...] = ("XREADGROUP", "GROUP", args.group, args.consumer, "COUNT", count)
    if block_ms is not None:
        head += ("BLOCK", max(1, block_ms))
    streams = [k.stream(args.topic) for k in keys]
    return Command((*head, "STREAMS", *streams, *[">"] * len(streams)))


def _is_limited(cfg: QueueConfig, raw: Any) -> bool:
    """Whether the stored limit of a topic (an HGET reply) holds it back (a rate or a
    concurrency); a partitioned queue has none (limits need one partition)."""
    if cfg.partitions != 1 or raw is None:
        return False
    limit = TopicLimit.from_stored(text(raw))
    return bool(limit.rate or limit.concurrency)


def _paused_cmd(cfg: QueueConfig, topic: str) -> Command:
    return Command(("HEXISTS", paused_key(cfg.name), topic))


def _look_plan(cfg: QueueConfig, topic: str) -> Plan[tuple[bool, bool]]:
    """Whether ``topic`` is paused, and limited: one round trip (``HEXISTS`` and, on a queue of
    one partition, ``HGET`` of the limits, in one pipeline)."""
    if cfg.partitions != 1:
        return (bool(int((yield _paused_cmd(cfg, topic)))), False)
    paused, raw = yield Commands((_paused_cmd(cfg, topic),
                                  Command(("HGET", limits_key(cfg.name), topic))))
    return (bool(int(paused)), _is_limited(cfg, raw))


def _take_step(cfg: QueueConfig, state: ReserveState, args: ReserveArgs, block_ms: int
               ) -> Plan[list[Entry]]:
    """The read of a limited topic: the shared take (``takeLimited``, as a worker's take loop
    calls it), which hands out no more than the limit lets start now. When it gives nothing
    and the caller may wait, wait as its reply says, never longer than ``block_ms``: for a
    freed lease (BLPOP on the topic's ``limitwake`` list), for a new entry (XREAD BLOCK from
    the group's last delivered id), or, held back by the rate, ``state.rest_s`` tells the
    caller to sleep until the next token (docs/limits.md)."""
    keys = PartitionKeys(cfg.name, 0)
    reply = parse_take((yield take_call(keys, args.group, args.consumer, args.topic,
                                        args.count)))
    if reply.entries or block_ms <= 0:
        return [(0, eid, fields) for eid, fields in reply.entries]
    wait_ms = max(1, min(reply.wait_ms, block_ms))
    if reply.reason == RATE:
        state.rest_s = wait_ms / 1000
    elif reply.reason == CONCURRENCY:
        yield Command(("BLPOP", keys.limit_wake(args.topic), f"{wait_ms / 1000:.3f}"))
    elif reply.reason == DRAINED:  # at once when an entry came after the take
        yield Command(("XREAD", "COUNT", 1, "BLOCK", block_ms, "STREAMS",
                       keys.stream(args.topic), reply.last_id or "$"))
    return []


def read_step(cfg: QueueConfig, state: ReserveState, args: ReserveArgs, block_ms: int,
              cluster: bool, limited: bool = False) -> Plan[list[Entry]]:
    """THE read of the pull API: new entries of the topic for this consumer, from every
    partition, blocking up to ``block_ms`` (0: not at all) when none is there. A ``limited``
    topic is read only through the shared take (``_take_step``), exactly as a worker reads it.

    One partition: one ``XREADGROUP`` (with ``BLOCK`` when waiting). Several: a non-blocking
    read per partition (starting at a different one each round) until ``count`` came; then, if
    none did, one blocking read over all partitions (a cluster blocks on one partition per round,
    in turns, ``CLUSTER_SLICE_S`` at most). May return more than ``count`` (a blocking read over
    several streams): the caller hands the extra ones back.
    """
    if limited:
        return (yield from _take_step(cfg, state, args, block_ms))
    parts = list(partition_keys(cfg.name, cfg.partitions))
    by_stream = {k.stream(args.topic): k.partition for k in parts}
    block = block_ms if block_ms > 0 else None
    if len(parts) == 1:
        return _entries((yield _xreadgroup(args, args.count, block, parts)), by_stream)
    start = state.turn % len(parts)
    state.turn += 1
    order = parts[start:] + parts[:start]
    found: list[Entry] = []
    for keys in order:
        found.extend(_entries((yield _xreadgroup(args, args.count - len(found), None, [keys])),
                              by_stream))
        if len(found) >= args.count:
            return found
    if found or block is None:
        return found
    if cluster:
        slice_ms = min(block, int(CLUSTER_SLICE_S * 1000))
        return _entries((yield _xreadgroup(args, args.count, slice_ms, order[:1])), by_stream)
    return _entries((yield _xreadgroup(args, args.count, block, order)), by_stream)


def _paused(cfg: QueueConfig, topic: str) -> Plan[bool]:
    return bool(int((yield _paused_cmd(cfg, topic))))


def _plain_read(cfg: QueueConfig, args: ReserveArgs, block_ms: int
                ) -> Plan[tuple[list[Entry], bool, bool]]:
    """The read of a topic the last round found neither paused nor limited, on a queue of one
    partition, in ONE round trip: a pipeline of the pause flag, the limit, the ``XREADGROUP``
    (blocking up to ``block_ms``) and the pause flag again. Returns the entries, whether the
    topic was paused before or after the read, and whether it is limited now: in either case
    the caller hands every entry back (not an attempt), as a worker does with what it read
    just before a pause or a limit reached it."""
    parts = [PartitionKeys(cfg.name, 0)]
    stream = parts[0].stream(args.topic)
    before, raw, reply, after = yield Commands((
        _paused_cmd(cfg, args.topic), Command(("HGET", limits_key(cfg.name), args.topic)),
        _xreadgroup(args, args.count, block_ms if block_ms > 0 else None, parts),
        _paused_cmd(cfg, args.topic)))
    entries = _entries(reply, {stream: 0})
    return entries, bool(int(before)) or bool(int(after)), _is_limited(cfg, raw)


def round_plan(cfg: QueueConfig, state: ReserveState, args: ReserveArgs, block_ms: int,
               now: float, cluster: bool) -> Plan[Round]:
    """One reserve round: upkeep, the pause and limit checks, one read (``read_step``), then
    decoding.

    A topic the previous round found neither paused nor limited, on a queue of one partition,
    is checked and read in one round trip (``_plain_read``); otherwise the checks come first
    (one round trip) and a paused topic is not read at all.

    Entries that can never run are dead-lettered as a worker does; entries over ``count``, and
    those read while the topic was paused (or limited: a limited topic is read only through
    the take), are handed back (not an attempt), as a worker hands back what it read just
    before a pause reached it."""
    yield from upkeep_plan(cfg, state, args, now)
    state.rest_s = 0.0
    back_all = False
    try:
        if cfg.partitions == 1 and args.topic in state.plain:
            entries, paused, limited = yield from _plain_read(cfg, args, block_ms)
            back_all = paused or limited
            if back_all:
                state.plain.discard(args.topic)
        else:
            paused, limited = yield from _look_plan(cfg, args.topic)
            if paused:
                return Round([], paused=True)
            if not limited:
                state.plain.add(args.topic)
            entries = yield from read_step(cfg, state, args, block_ms, cluster, limited)
            # a blocking read may return after a pause began (a take never blocks: no second
            # look)
            paused = back_all = (bool(entries) and block_ms > 0 and not limited
                                 and (yield from _paused(cfg, args.topic)))
    except StreamdelayError as exc:  # the group or stream was deleted: register again
        if (not isinstance(exc, GroupNotFound) and "NOGROUP" not in str(exc)
                and "UNBLOCKED" not in str(exc)):
            raise
        state.registered.discard((args.group, args.topic))
        yield from _register_plan(cfg, args.group, args.topic)
        state.registered.add((args.group, args.topic))
        return Round([])
    return (yield from _deliver_plan(cfg, state, args, entries, paused, back_all, now))


def _deliver_plan(cfg: QueueConfig, state: ReserveState, args: ReserveArgs,
                  entries: list[Entry], paused: bool, back_all: bool, now: float
                  ) -> Plan[Round]:
    """What a round read becomes: deliveries with signed receipts (up to ``count``), dead
    letters for entries that can never run, and every other entry handed back (``back_all``,
    over ``count``, or no signing key to be had: that error is raised once they are back)."""
    found = Round([], paused, rest_s=state.rest_s)
    # the key is read only when a job came: a round that finds none costs no round trip for it
    key, unsigned = None, None
    try:
        if entries and not back_all:
            key = yield from signing_key_plan(cfg.name, state.key, now)
    except StreamdelayError as exc:
        unsigned = exc
    settle: dict[int, list[ScriptCall]] = {}
    back: dict[int, list[str]] = {}
    for partition, entry_id, fields in entries:
        keys = PartitionKeys(cfg.name, partition)
        opened = open_entry(fields, args.topic, entry_id, partition, None, cfg.max_body_bytes)
        if opened.job is None:  # never runnable: dead now, like a worker's delivery
            found.dropped.append((opened.job_id, opened.error))
            settle.setdefault(partition, []).append(fail_call(
                keys, args.group, args.topic, opened.job_id, entry_id, 0, True, opened.error))
        elif key is None or len(found.reserved) >= args.count:
            back.setdefault(partition, []).extend((args.topic, opened.job_id, entry_id))
        else:
            found.reserved.append(_reserved(cfg, args, opened.job, opened.backoff,
                                            opened.ttr_ms, key))
    for partition, flat in back.items():
        settle.setdefault(partition, []).append(
            release_call(PartitionKeys(cfg.name, partition), args.group, flat))
    calls = [call for per_partition in settle.values() for call in per_partition]
    if calls:
        yield calls if len(calls) > 1 else calls[0]
    if unsigned is not None:
        raise unsigned
    return found


def _reserved(cfg: QueueConfig, args: ReserveArgs, job: Job, backoff: BackoffPolicy | None,
              ttr_ms: int, key: bytes) -> Reserved:
    """A delivery with its receipt, signed with ``key``; the retry delay of a failure is drawn
    now (the receipt carries it: a rebuilt reservation fails with the job's backoff without
    reading the job)."""
    retry_ms = failure_delay_ms(backoff or cfg.backoff, job.attempt)
    receipt = signed(bounded(Receipt(RECEIPT_VERSION, cfg.name, job.partition, args.topic,
                                     job.id, job.entry_id, args.group, args.consumer,
                                     job.attempt, job.due, ttr_ms, retry_ms,
                                     keep_ms=job.keep_result_ms)), key)
    return Reserved(job, receipt, encode_receipt(receipt))


def _stale(receipt: Receipt, what: str) -> StaleReceipt:
    return StaleReceipt(f"receipt: the delivery of job {receipt.id!r} is no longer current "
                        f"({what}: it was reclaimed, cancelled, replaced or settled)",
                        field="receipt", job_id=receipt.id, topic=receipt.topic)


def ack_plan(cfg: QueueConfig, key: ReceiptKey, receipt: Receipt, result: Any = None
             ) -> Plan[None]:
    """Acknowledge a reservation (``ackJobs``), keeping ``result`` when its job keeps one
    (docs/results.md); ``StaleReceipt`` when it was not current, ``ValidationError`` when the
    receipt is not signed by the queue (``key``) or the result is too big (nothing written)."""
    kept: tuple[Arg, ...] = ()
    if receipt.keep_ms:
        kept = (1, receipt.keep_ms, encode_result(result, cfg.serializer, cfg.max_result_bytes))
    yield from check_receipt_plan(cfg.name, key, receipt)
    keys = PartitionKeys(cfg.name, receipt.partition)
    keep_ms = validation.delay_ms(cfg.keep_done)
    done = yield ack_call(keys, receipt.group, keep_ms, [receipt.topic, receipt.id,
                                                         receipt.entry], kept)
    if not int(done):
        raise _stale(receipt, "ack")


def fail_plan(cfg: QueueConfig, key: ReceiptKey, receipt: Receipt, error: object,
              retry_delay: object, dead: object) -> Plan[str]:
    """Fail a reservation (``failJob``): retried after ``retry_delay`` (None: the job's backoff)
    or dead after its last attempt or with ``dead``. Returns ``"retried"`` or ``"dead"``."""
    if not isinstance(error, str):
        raise ValidationError("error: must be a str", field="error")
    if not isinstance(dead, bool):
        raise ValidationError("dead: must be a bool", field="dead")
    delay = (receipt.retry_ms if retry_delay is None
             else validation.delay_ms(retry_delay, "retry_delay"))
    yield from check_receipt_plan(cfg.name, key, receipt)
    keys = PartitionKeys(cfg.name, receipt.partition)
    reply = yield fail_call(keys, receipt.group, receipt.topic, receipt.id, receipt.entry,
                            delay, dead, error[:ERROR_TEXT_LIMIT], receipt.keep_ms)
    outcome = parse_fail(reply)
    if outcome.outcome == 0:
        raise _stale(receipt, "fail")
    return "dead" if outcome.dead else "retried"


def touch_plan(cfg: QueueConfig, key: ReceiptKey, receipt: Receipt, progress: Any = None
               ) -> Plan[None]:
    """Heartbeat a reservation (``touchJobs``: its idle time starts again, so its ttr counts
    from now), storing ``progress`` when given (docs/results.md#progress); ``StaleReceipt``
    when its consumer no longer holds it."""
    reported: tuple[Arg, ...] = ()
    if progress is not None:
        reported = (1, receipt.id, max(receipt.ttr_ms, 1000) * 2, validation.progress(progress))
    yield from check_receipt_plan(cfg.name, key, receipt)
    keys = PartitionKeys(cfg.name, receipt.partition)
    lost = yield touch_call(keys, receipt.group, receipt.consumer,
                            [receipt.topic, receipt.entry], reported)
    if texts(lost):
        raise _stale(receipt, "touch")


def release_plan(cfg: QueueConfig, key: ReceiptKey, receipts: list[Receipt]) -> Plan[int]:
    """Hand reservations back at once (``releaseJobs``, one call per partition and group):
    each job goes to the tail of its topic for any consumer, no attempt spent, as a worker
    hands back what it holds at a graceful stop. For a consumer that took jobs it will not
    run (the HTTP service when its answer cannot be built or sent, docs/http.md#consumers).
    Returns how many were still current (a stale one is only acknowledged); a receipt not
    signed by the queue (``key``) is refused before anything is handed back."""
    for receipt in receipts:
        yield from check_receipt_plan(cfg.name, key, receipt)
    flat: dict[tuple[int, str], list[str]] = {}
    for receipt in receipts:
        flat.setdefault((receipt.partition, receipt.group), []).extend(
            (receipt.topic, receipt.id, receipt.entry))
    calls = [release_call(PartitionKeys(cfg.name, partition), group, triples)
             for (partition, group), triples in flat.items()]
    if not calls:
        return 0
    replies = yield calls if len(calls) > 1 else calls[0]
    return sum(int(reply) for reply in (replies if len(calls) > 1 else [replies]))
