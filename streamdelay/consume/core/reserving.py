"""The Reservation's round (``Queue.reserve``, docs/pull.md): the consumer core
(``consumer_core.py``: the route, its sort, the rotation, the upkeep cadence, the hand-back)
with what is the Reservation's own, receipts. Upkeep (register, fleet, reclaim, prune:
``upkeep_plans.py``), the route's look, one take (``taking.py``), opening each entry
(``protocol/deliveries.py``), then dead-lettering what can never run and handing back what
must not run now. ``consume/reservation.py`` drives it, sync and async.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...base import validation
from ...base.errors import GroupNotFound, StreamdelayError
from ...base.models import BackoffPolicy, Job
from ...limits.limit_plans import DRAINED, GOT_ALL
from ...protocol.backoff import failure_delay_ms
from ...protocol.deliveries import expire_call, fail_call, open_entry
from ...protocol.fleet_records import info_blob
from ...protocol.keys import PartitionKeys, partition_keys
from ...protocol.layouts import FLEET_EVERY_S
from ...protocol.plan import Commands, Plan
from ...protocol.queue_spec import QueueSpec
from ...protocol.scripts import ScriptCall
from ...protocol.streams import read_group
from . import leasing
from .cadence import FLEET, PRUNE, RECLAIM
from .constants import PRUNE_EVERY_S, RECLAIM_EVERY_S
from .consumer_core import Back, ConsumerCore, Took, backs, hand_back_calls, take_now, take_wait
from .receipts import (
    RECEIPT_VERSION,
    Receipt,
    ReceiptKey,
    bounded,
    encode_receipt,
    signed,
    signing_key_plan,
)
from .routing import PAUSED, STAGED, TAKES, Route
from .staging import staged_flag
from .taking import (
    TIME,
    Entry,
    clock_ms,
    entry_priority,
    is_limited,
    limit_of,
    parse_read,
    paused_flag,
    read_plan,
    streams_of,
)
from .upkeep_plans import join_fleet_plan, prune_plan, reclaim_plan, register_plan

MAX_WAIT_S = 30.0
MAX_COUNT = 100
READ_SLICE_S = 1.0  # longest single blocking read: a pause is seen within about a second
CLUSTER_SLICE_S = 0.25  # a cluster blocks on one partition at a time, in turns


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
    """What one queue object keeps between reserve calls (in memory, per process): its
    consumer core (``consumer_core.py``: routes, rotation, registrations, the process's upkeep
    cadence) and what is the Reservation's own, the receipt key."""

    core: ConsumerCore
    key: ReceiptKey = field(default_factory=ReceiptKey)  # signs the receipts (receipts.py)


@dataclass(frozen=True)
class Reserved:
    """One delivery a reserve round took: the decoded job and its receipt (and as text)."""

    job: Job
    receipt: Receipt
    text: str
    priority: str | None = None  # a staged topic's job: its priority (lateness by priority)


@dataclass(frozen=True)
class Round:
    """What one reserve round found: deliveries, whether the topic is paused, and the entries
    it dead-lettered because they can never run (job id, why)."""

    reserved: list[Reserved]
    paused: bool = False
    dropped: list[tuple[str, str]] = field(default_factory=list)
    rest_s: float = 0.0  # the rate limit holds the topic back: the caller sleeps this long


def upkeep_plan(cfg: QueueSpec, state: ReserveState, args: ReserveArgs, now: float
                ) -> Plan[int]:
    """Register the group once, renew the fleet entry, then reclaim and prune when the
    process's cadence says so (at most every ``RECLAIM_EVERY_S`` / ``PRUNE_EVERY_S`` per group
    and topic in the whole process; never while ``serve``'s reclaim loop holds the queue's
    reclaim: ``cadence.py``): a worker's duties (docs/pull.md, "Who reclaims"). Returns how
    many deliveries were re-queued or went dead."""
    key = (args.group, args.topic)
    core = state.core
    if key not in core.registered:
        yield from register_plan(cfg.name, cfg.partitions, args.group, [args.topic])
        core.registered.add(key)
    # before its read: docs/keys.md#fleet
    if core.due(FLEET, (args.consumer,), now, FLEET_EVERY_S):
        info = info_blob(host="", pid=0, version="", group=args.group, topics=[args.topic],
                         concurrency=0, started_ms=0, running=[], state="running", kind="pull")
        yield from join_fleet_plan(cfg.name, args.consumer, info, 3 * FLEET_EVERY_S)
    moved = 0
    if core.due(RECLAIM, key, now, RECLAIM_EVERY_S):
        found = yield from reclaim_plan(cfg.name, cfg.partitions, args.group, [args.topic])
        if found.gone:  # the stream or group was deleted: register again
            yield from register_plan(cfg.name, cfg.partitions, args.group, [args.topic])
        moved = found.count()
    if core.due(PRUNE, key, now, PRUNE_EVERY_S, first=PRUNE_EVERY_S):
        yield from prune_plan(cfg.name, cfg.partitions, args.group, [args.topic])
    return moved


def read_step(cfg: QueueSpec, state: ReserveState, args: ReserveArgs, block_ms: int,
              cluster: bool) -> Plan[list[Entry]]:
    """The read of a topic without a limit, from every partition, blocking up to
    ``block_ms`` (0: not at all) when none is there.

    One partition: one ``XREADGROUP`` (with ``BLOCK`` when waiting). Several: a non-blocking
    read per partition (starting at a different one each round) until ``count`` came; then, if
    none did, one blocking read over all partitions (a cluster blocks on one partition per round,
    in turns, ``CLUSTER_SLICE_S`` at most). May return more than ``count`` (a blocking read over
    several streams): the caller hands the extra ones back.
    """
    parts = list(partition_keys(cfg.name, cfg.partitions))
    block = block_ms if block_ms > 0 else None
    if len(parts) == 1:
        return (yield from read_plan(args.group, args.consumer,
                                     streams_of(parts, [args.topic]), args.count, block))
    order = state.core.rotation(parts)
    found: list[Entry] = []
    for keys in order:
        found.extend((yield from read_plan(args.group, args.consumer,
                                           streams_of([keys], [args.topic]),
                                           args.count - len(found), None)))
        if len(found) >= args.count:
            return found
    if found or block is None:
        return found
    if cluster:
        return (yield from read_plan(args.group, args.consumer,
                                     streams_of(order[:1], [args.topic]), args.count,
                                     min(block, int(CLUSTER_SLICE_S * 1000))))
    return (yield from read_plan(args.group, args.consumer, streams_of(order, [args.topic]),
                                 args.count, block))


def _plain_read(cfg: QueueSpec, args: ReserveArgs, block_ms: int, look_staged: bool
                ) -> Plan[tuple[list[Entry], bool, bool, bool | None]]:
    """The read of a topic the last round found neither paused nor limited nor staged, on a
    queue of one partition, in ONE round trip: a pipeline of the pause flag, the
    ``XREADGROUP`` (blocking up to ``block_ms``), ``TIME`` (the clock the open step checks a
    job's deadline against: docs/expiry.md), then the pause flag again, the limit and, every
    ``REFRESH_S``, the staged flag: what the topic is *after* the read, whatever came while it
    waited. Returns the entries, whether the topic was paused before or after the read,
    whether it is limited and whether it is staged (None: not looked at): the core's ``sort``
    hands back what must not run (not an attempt), as a worker does with what it read just
    before a pause or a limit reached it."""
    streams = streams_of([PartitionKeys(cfg.name, 0)], [args.topic])
    staged = (staged_flag(cfg.name, args.topic),) if look_staged else ()
    replies = yield Commands((
        paused_flag(cfg.name, args.topic),
        read_group(args.group, args.consumer, list(streams), args.count,
                   block_ms if block_ms > 0 else None),
        TIME, paused_flag(cfg.name, args.topic), limit_of(cfg.name, args.topic), *staged))
    before, reply, clock, after, raw = replies[:5]
    return (parse_read(reply, streams, clock_ms(clock)), bool(int(before)) or bool(int(after)),
            is_limited(raw), bool(int(replies[5])) if look_staged else None)


def _look(cfg: QueueSpec, topic: str, look_staged: bool
          ) -> Plan[tuple[bool, bool, bool | None]]:
    """Whether ``topic`` is paused, limited and, with ``look_staged``, staged (else None):
    one round trip (all in partition 0's slot)."""
    replies = yield Commands((paused_flag(cfg.name, topic), limit_of(cfg.name, topic),
                              *((staged_flag(cfg.name, topic),) if look_staged else ())))
    return (bool(int(replies[0])), is_limited(replies[1]),
            bool(int(replies[2])) if look_staged else None)


def _read(cfg: QueueSpec, state: ReserveState, args: ReserveArgs, block_ms: int,
          cluster: bool, now: float = 0.0) -> Plan[tuple[list[Entry], list[Entry], bool, float]]:
    """The take of one round, by the topic's route (the core's ``learn``, one rule for every
    driver: routing.py): (entries to open, entries to hand back, paused, rest seconds).

    Whether the topic is staged is looked at every ``REFRESH_S``, in the round trip the round
    makes anyway (no command more per plain read); a staged topic is taken only through
    ``takeStaged`` (``staging.py``), a limited one only through ``takeLimited``. What a read
    returned is sorted by the route *after* it (``core.sort``): a pause, a limit or a staging
    that came while it waited sends it back."""
    core, topic = state.core, args.topic
    look = core.look_due(topic, now)
    if cfg.partitions == 1 and core.known_plain(topic):
        entries, paused, limited, staged = yield from _plain_read(cfg, args, block_ms, look)
        found = core.learn(topic, paused, limited, staged)
        if entries or found != STAGED:  # what the plain read took runs only on a plain topic
            run, back = core.sort(entries)
            return run, back, found == PAUSED, 0.0
        block_ms, look = 0, False  # found staged, nothing read: its take, at once
    found = core.learn(topic, *(yield from _look(cfg, topic, look)))
    if found == PAUSED:
        return [], [], True, 0.0
    if found in TAKES:  # only through the core's take (a take never blocks: no second look)
        entries, rest_s = yield from _take_parts(cfg, state, args, found, block_ms, cluster)
        return entries, [], False, rest_s
    entries = yield from read_step(cfg, state, args, block_ms, cluster)
    if entries and block_ms > 0:  # the read waited: a pause, a limit, a staging came since?
        found = core.learn(topic, *(yield from _look(cfg, topic, True)))
    run, back = core.sort(entries)
    return run, back, found == PAUSED, 0.0


def _take_parts(cfg: QueueSpec, state: ReserveState, args: ReserveArgs, found: Route,
                block_ms: int, cluster: bool) -> Plan[tuple[list[Entry], float]]:
    """The take of a staged or limited topic (the core's ``take_now``, as a worker's take
    loop takes it) on each partition in the core's rotation until ``count`` came. A limited
    topic's stops where its limit holds back (the limit is the topic's, over every
    partition); a staged topic's goes on (each partition's lanes answer for themselves: the
    soonest wait is kept). When none came, one wait as the takes said (``take_wait``): a
    staged topic on every partition's wake list (a cluster: the first's), a limited one for
    a freed lease or a token (partition 0's slot), or, drained, for a new entry on the
    round's first partition (``CLUSTER_SLICE_S`` at most on several: the next round waits
    on the next one). Returns the entries and the seconds to rest (a rate)."""
    core = state.core
    order = core.rotation(partition_keys(cfg.name, cfg.partitions))
    limited = args.topic in core.routes.limited
    entries: list[Entry] = []
    first: Took | None = None  # the round's first take: a drained topic waits on its stream
    held: Took | None = None  # the take whose reason the wait follows
    for keys in order:
        took = yield from take_now(found, keys, args.group, args.consumer, args.topic,
                                   args.count - len(entries), limited)
        entries.extend(took.entries)
        first = first or took
        if len(entries) >= args.count:
            break
        if found == STAGED:
            if took.reason != GOT_ALL and (held is None or 0 < took.wait_ms < held.wait_ms
                                           or held.wait_ms <= 0):
                held = took
        elif took.reason != DRAINED:  # the limit holds back
            held = took
            break
    if entries or block_ms <= 0 or first is None:
        return entries, 0.0
    if found == STAGED:
        return entries, (yield from take_wait(found, order[:1] if cluster else order,
                                              args.topic, held or Took([], GOT_ALL, 0),
                                              block_ms))
    if held is None:  # drained on every partition: a new entry on the first one
        return entries, (yield from take_wait(found, order[:1], args.topic, first, min(
            block_ms, int(CLUSTER_SLICE_S * 1000)) if len(order) > 1 else block_ms))
    return entries, (yield from take_wait(found, order[:1], args.topic,
                                          held._replace(last_id=""), block_ms))


def round_plan(cfg: QueueSpec, state: ReserveState, args: ReserveArgs, block_ms: int,
               now: float, cluster: bool) -> Plan[Round]:
    """One reserve round: upkeep, the topic's route, one take (``_read``), then opening each
    entry.

    A topic the previous round found neither paused nor limited, on a queue of one partition,
    is checked and read in one round trip (``_plain_read``); otherwise the checks come first
    (one round trip) and a paused topic is not read at all.

    Entries that can never run are dead-lettered as a worker does; entries over ``count``, and
    those the core's ``sort`` sends back (read while the topic became paused, limited or
    staged), are handed back by the core's one hand-back (not an attempt), as a worker hands
    back what it read just before a pause reached it."""
    yield from upkeep_plan(cfg, state, args, now)
    try:
        entries, back, paused, rest_s = yield from _read(cfg, state, args, block_ms, cluster,
                                                         now)
    except GroupNotFound:  # the group or stream was deleted: register again
        registered = state.core.registered
        registered.discard((args.group, args.topic))
        yield from register_plan(cfg.name, cfg.partitions, args.group, [args.topic])
        registered.add((args.group, args.topic))
        return Round([])
    if paused and not entries and not back:
        return Round([], paused=True)
    return (yield from _deliver_plan(cfg, state, args, entries, back, paused, rest_s, now))


def _deliver_plan(cfg: QueueSpec, state: ReserveState, args: ReserveArgs,
                  entries: list[Entry], back: list[Entry], paused: bool, rest_s: float,
                  now: float) -> Plan[Round]:
    """What a round read becomes (open, then settle what is not handed out): deliveries with
    signed receipts (up to ``count``), dead letters for entries that can never run or whose
    job's deadline passed (``expireJobs``, docs/expiry.md), and the rest handed back through
    the core's hand-back (``back``, over ``count``, or no signing key to be had: that error is
    raised once they are back), all in one round trip."""
    found = Round([], paused, rest_s=rest_s)
    rows, others = backs(back)  # what the route says must not run now
    entries = [*entries, *others]  # not a job's entry (the sort runs those): opened, dropped
    # the key is read only when a job came: a round that finds none costs no round trip for it
    key, unsigned = None, None
    try:
        if entries:
            key = yield from signing_key_plan(cfg.name, state.key, now)
    except StreamdelayError as exc:
        unsigned = exc
    settle: dict[int, list[ScriptCall]] = {}
    expired: dict[int, list[str]] = {}  # partition -> the triples expireJobs settles
    frees: list[tuple[str, str]] = []  # leases (slot 0) of the entries that go dead
    staged = args.topic in state.core.routes.staged
    for entry in entries:
        keys = PartitionKeys(cfg.name, entry.partition)
        opened = open_entry(entry.fields, args.topic, entry.entry_id, entry.partition, None,
                            cfg.max_body_bytes, entry.now_ms)
        if entry.leased and (opened.expired or opened.job is None):
            frees.append((args.topic, leasing.member(entry.partition, entry.entry_id)))
        if opened.expired:  # its deadline passed while it waited: dead, never handed out
            found.dropped.append((opened.job_id, opened.error))
            expired.setdefault(entry.partition, []).extend(
                (args.topic, opened.job_id, entry.entry_id))
        elif opened.job is None:  # never runnable: dead now, like a worker's delivery
            found.dropped.append((opened.job_id, opened.error))
            settle.setdefault(entry.partition, []).append(fail_call(
                keys, args.group, args.topic, opened.job_id, entry.entry_id, 0, True,
                opened.error))
        elif key is None or len(found.reserved) >= args.count:
            rows.append(Back(entry.partition, args.topic, opened.job_id, entry.entry_id,
                             entry.leased))
        else:
            # a staged topic's job: its lateness counts by priority too (docs/priorities.md)
            priority = entry_priority(entry.fields) if staged else None
            found.reserved.append(_reserved(cfg, args, opened.job, opened.backoff,
                                            opened.ttr_ms, key, entry.leased, priority))
    for partition, flat in expired.items():
        settle.setdefault(partition, []).append(
            expire_call(PartitionKeys(cfg.name, partition), args.group, flat))
    calls = [call for per_partition in settle.values() for call in per_partition]
    if frees:
        calls.append(leasing.free_call(cfg.name, frees))
    calls.extend(hand_back_calls(cfg.name, args.group, rows))
    if calls:
        yield calls if len(calls) > 1 else calls[0]
    if unsigned is not None:
        raise unsigned
    return found


def _reserved(cfg: QueueSpec, args: ReserveArgs, job: Job, backoff: BackoffPolicy | None,
              ttr_ms: int, key: bytes, lease: bool = False, priority: str | None = None
              ) -> Reserved:
    """A delivery with its receipt, signed with ``key``; the retry delay of a failure is drawn
    now (the receipt carries it: a rebuilt reservation fails with the job's backoff without
    reading the job)."""
    retry_ms = failure_delay_ms(backoff or cfg.backoff, job.attempt)
    receipt = signed(bounded(Receipt(RECEIPT_VERSION, cfg.name, job.partition, args.topic,
                                     job.id, job.entry_id, args.group, args.consumer,
                                     job.attempt, job.due, ttr_ms, retry_ms,
                                     keep_ms=job.keep_result_ms, lease=lease,
                                     done_ms=job.keep_done_ms)), key)
    return Reserved(job, receipt, encode_receipt(receipt), priority)
