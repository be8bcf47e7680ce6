"""Lateness over the last minutes, kept in Redis for the dashboard (docs/dashboard.md#lateness).

A worker's Prometheus histogram lives in that process only; the dashboard needs every worker's
lateness of the last minutes, per topic. So each worker also counts its handler starts into the
buckets of the lateness histogram, in memory (``LatenessRecorder.observe``: a bisect and a dict
increment, no I/O), and every ``FLUSH_EVERY`` seconds sends what it counted in one
``recordLateness`` call, which adds the counts to the hash of the current minute (server clock)
with an expiry of ``KEEP_MINUTES``. ``lateness_plan`` reads the last minutes back
(``readLateness``, read only) and ``quantile_ms`` turns bucket counts into p50 / p99 the way
Prometheus's ``histogram_quantile`` does (linear inside the bucket).

Throughput rides in the same record: ``LatenessRecorder.settled`` counts each delivery's
outcome (``ok``, ``retried``, ``dead``) under the field ``<outcome>:<topic>`` of the same minute
hash, flushed by the same call, so counting outcomes adds no round trip per job. Handler starts
per minute are the lateness counts themselves. A reader that knows only numeric buckets skips
these fields.

Per priority too, for the jobs of staged topics (docs/priorities.md): ``observe`` with the job's
``priority`` also counts the start under the topic ``<topic>#p<priority>`` (``#`` is not allowed
in a topic), so the same flush writes the fields ``<bucket>:<topic>#p<priority>``;
``parse_lateness`` files them under ``LatenessWindow.priorities``, not as topics.

Bounded: one hash field per topic and bucket (or outcome) per minute, and for a staged topic one
per priority seen (at most 10) and bucket, ``KEEP_MINUTES`` hashes per queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..io.runner import call_with_retry
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Plan
from ..protocol.scripts import ScriptCall, script

log = logging.getLogger("streamdelay.worker")

# Handler start minus due time, seconds: fine steps below 25 ms (1 ms apart from 10 ms), then
# coarser up to a minute. The buckets of ``streamdelay_lateness_seconds`` too.
LATENESS_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05,
                    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BOUNDS_MS = tuple(round(b * 1000, 3) for b in LATENESS_BUCKETS)
OVERFLOW = len(BOUNDS_MS)  # the index of the bucket above the last bound (> 60 s)
FLUSH_EVERY = 5.0  # seconds between two flushes of a worker
KEEP_MINUTES = 30  # how long a minute's counts stay in Redis
MAX_MINUTES = 60  # the most minutes one read returns
FLUSH_GIVE_UP = 30.0  # seconds a flush retries through an outage before it is dropped
# the outcome fields of the record (docs/keys.md, docs/dashboard.md#lateness)
OUTCOMES = ("ok", "retried", "dead")
PRIORITY_MARK = "#p"  # <topic>#p<priority>: a staged topic's lateness of one priority


def bucket_of(lateness_ms: float) -> int:
    """The index of the bucket that counts ``lateness_ms`` (a value on a bound counts in that
    bucket, as Prometheus's ``le`` does); ``OVERFLOW`` above the last bound."""
    return bisect_left(BOUNDS_MS, lateness_ms)


def _order(item: tuple[tuple[str, int | str], int]) -> tuple[str, int, int, str]:
    """Sort key of a count: by topic, buckets in order, then outcomes by name."""
    (topic, bucket), _ = item
    if isinstance(bucket, int):
        return topic, 0, bucket, ""
    return topic, 1, 0, bucket


class LatenessRecorder:
    """Counts a worker's handler starts per topic and bucket, and flushes them to Redis."""

    def __init__(self, queue: str, flusher: str, keep_s: int = KEEP_MINUTES * 60) -> None:
        self.key = PartitionKeys(queue, 0).lateness
        self.flusher = flusher
        self.keep_s = keep_s
        self.counts: dict[tuple[str, int | str], int] = {}
        # grows per flush; starts at the wall clock so a restarted worker of the same name goes
        # on above the sequence numbers Redis remembers for it
        self.seq = int(time.time() * 1000)
        self.failing = False  # the last flush failed (its warning was logged)

    def observe(self, topic: str, lateness_ms: float, priority: str | None = None) -> None:
        """Count one handler start of ``topic``, ``lateness_ms`` after its due time; with the
        ``priority`` of a staged topic's job, also under ``<topic>#p<priority>``."""
        bucket = bucket_of(lateness_ms)
        key = (topic, bucket)
        self.counts[key] = self.counts.get(key, 0) + 1
        if priority is not None:
            key = (topic + PRIORITY_MARK + priority, bucket)
            self.counts[key] = self.counts.get(key, 0) + 1

    def settled(self, topic: str, outcome: str) -> None:
        """Count one delivery of ``topic`` settled as ``outcome`` (one of ``OUTCOMES``)."""
        key = (topic, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1

    def take(self) -> ScriptCall | None:
        """The ``recordLateness`` call of what was counted since the last one (None: nothing);
        the counts start again from zero."""
        if not self.counts:
            return None
        counts, self.counts = self.counts, {}
        self.seq += 1
        args: list[str | int] = [self.keep_s, self.flusher, self.seq]
        for (topic, bucket), count in sorted(counts.items(), key=_order):
            args += [topic, bucket, count]
        return script("recordLateness").call([self.key], args)

    async def flush(self, client: Any, give_up_after: float = FLUSH_GIVE_UP) -> None:
        """Send what was counted; on failure the counts are dropped (they are statistics, and
        a retried call is applied once: see the script's header)."""
        call = self.take()
        if call is None:
            return
        try:
            await call_with_retry(client, call, give_up_after, "lateness flush")
        except Exception as exc:  # Redis full or away: the dashboard misses these seconds
            # one warning per streak of failures (a full Redis refuses every flush)
            (log.debug if self.failing else log.warning)(
                "could not record lateness for the dashboard (%s)", exc)
            self.failing = True
        else:
            self.failing = False

    async def run(self, client: Any, every: float = FLUSH_EVERY) -> None:
        """Flush every ``every`` seconds until cancelled, then once more."""
        try:
            while True:
                await asyncio.sleep(every)
                await self.flush(client)
        finally:
            # shutting down: best effort, bounded (Redis may be away)
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                await asyncio.wait_for(self.flush(client, give_up_after=1.0), 1.0)


# --- reading (the dashboard) ----------------------------------------------------------------


@dataclass(frozen=True)
class LatenessWindow:
    """Bucket counts of the last minutes: ``minutes`` are epoch minutes (server clock), oldest
    first; ``topics`` maps a topic to one list of ``OVERFLOW + 1`` counts per minute;
    ``outcomes`` maps a topic to one ``{outcome: count}`` per minute; ``priorities`` maps a
    staged topic to its priorities (``"0"``-``"9"``), each to counts per minute as ``topics``."""

    now: int
    minutes: tuple[int, ...]
    topics: dict[str, list[list[int]]] = field(default_factory=dict)
    outcomes: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    priorities: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)

    def throughput(self, topic: str) -> dict[str, list[int]]:
        """Per minute, oldest first: ``started`` (handler starts) and each outcome."""
        late = self.topics.get(topic)
        settled = self.outcomes.get(topic)
        series = {"started": [sum(row) for row in late] if late else [0] * len(self.minutes)}
        for name in OUTCOMES:
            series[name] = ([m.get(name, 0) for m in settled] if settled
                            else [0] * len(self.minutes))
        return series

    def merged(self, topic: str, last: int | None = None,
               priority: str | None = None) -> list[int]:
        """The counts of ``topic`` (of its jobs of ``priority`` only, when given) added up over
        the window (or its ``last`` minutes)."""
        rows = (self.topics.get(topic, []) if priority is None
                else self.priorities.get(topic, {}).get(priority, []))
        if last is not None:
            rows = rows[-last:] if last > 0 else []
        total = [0] * (OVERFLOW + 1)
        for row in rows:
            for i, count in enumerate(row):
                total[i] += count
        return total


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_lateness(reply: Any) -> LatenessWindow:
    """The window of a ``readLateness`` reply; fields that are not ``<bucket>:<topic>`` with a
    known bucket are ignored, ``<bucket>:<topic>#p<priority>`` go to ``priorities``."""
    now = int(reply[0])
    pairs = list(zip(reply[1::2], reply[2::2], strict=True))
    minutes = tuple(int(m) for m, _ in pairs)
    topics: dict[str, list[list[int]]] = {}
    outcomes: dict[str, list[dict[str, int]]] = {}
    priorities: dict[str, dict[str, list[list[int]]]] = {}
    for index, (_, flat) in enumerate(pairs):
        for name, count in zip(flat[0::2], flat[1::2], strict=True):
            bucket, _, topic = _text(name).partition(":")
            if bucket in OUTCOMES and topic:
                settled = outcomes.setdefault(topic, [{} for _ in minutes])
                settled[index][bucket] = settled[index].get(bucket, 0) + int(count)
                continue
            if not bucket.isdigit() or int(bucket) > OVERFLOW or not topic:
                continue
            into, name = topics, topic
            if PRIORITY_MARK in topic:  # <topic>#p<priority>: a staged topic's, by priority
                topic, _, name = topic.partition(PRIORITY_MARK)
                if not name.isdigit() or not topic:
                    continue
                into = priorities.setdefault(topic, {})
            rows = into.get(name)
            if rows is None:
                rows = into[name] = [[0] * (OVERFLOW + 1) for _ in minutes]
            rows[index][int(bucket)] += int(count)
    return LatenessWindow(now, minutes, topics, outcomes, priorities)


def lateness_plan(queue: str, minutes: int) -> Plan[LatenessWindow]:
    """Read the last ``minutes`` (1-60, the current one included) of ``queue``'s lateness."""
    if not 1 <= minutes <= MAX_MINUTES:
        raise ValueError(f"minutes: {minutes} is not in 1-{MAX_MINUTES}")
    reply = yield script("readLateness").call([PartitionKeys(queue, 0).lateness], [minutes])
    return parse_lateness(reply)


def quantile_ms(counts: Sequence[int], q: float) -> float | None:
    """The ``q`` quantile (0-1) of bucket counts, ms, linear inside its bucket as Prometheus's
    ``histogram_quantile``; None without counts. Above the last bound it answers that bound
    (60 000 ms: "at least a minute")."""
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for i, count in enumerate(counts):
        if count and seen + count >= rank:
            if i >= OVERFLOW:
                return BOUNDS_MS[-1]
            low = 0.0 if i == 0 else BOUNDS_MS[i - 1]
            return low + (BOUNDS_MS[i] - low) * max(rank - seen, 0) / count
        seen += count
    return BOUNDS_MS[-1]
