"""``Queue.events`` / ``AsyncQueue.events``: read and follow the queue's lifecycle events.

The events of each partition are one stream (``protocol/event_entries.py``); a reader merges them by
time. On one server (or a Sentinel master) one ``XREAD`` covers every partition (blocking
when following); on a Cluster, whose partitions sit in different slots, each partition keeps
one blocking ``XREAD`` of its own outstanding (a thread each for the blocking face, a task each
for asyncio), and what any of them brings is yielded at once. Connection trouble is retried
for ``retry_for`` seconds, resuming from the cursor (docs/events.md#reading).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..base import validation
from ..base.events import JobEvent
from ..io.agreement import agree_partitions_async, agree_partitions_sync
from ..io.calls import command
from ..io.clients import AsyncClient, SyncClient, is_cluster
from ..io.config import QueueConfig
from ..protocol.event_entries import READ_COUNT, EventMerger, read_command, start_ids
from ..protocol.keys import partition_keys
from ..protocol.streams import read_reply

MAX_BLOCK_MS = 5000  # one blocking read; shorter than any socket_timeout allowed (>= 0.1 s: /2)
_TROUBLE = (RedisConnectionError, RedisTimeoutError, OSError)
Read = list[tuple[int, list[tuple[str, Any]], bool]]  # partition, entries, full


def _block_ms(cfg: QueueConfig) -> int:
    return max(1, min(MAX_BLOCK_MS, int(cfg.socket_timeout * 500)))


def _parse(keys: list[str], partitions: list[int], reply: Any) -> Read:
    by_key = dict(read_reply(reply))  # RESP2 or RESP3 (protocol/streams.py)
    return [(p, by_key.get(keys[i], []), len(by_key.get(keys[i], [])) >= READ_COUNT)
            for i, p in enumerate(partitions)]


def _apply(merger: EventMerger, read: Read, caught_up: set[int], group: int) -> None:
    """Hand one read to the merger; a read with no full page has caught ``group`` up."""
    full = False
    for partition, entries, page_full in read:
        merger.add(partition, entries, page_full)
        full = full or page_full
    if not full:
        caught_up.add(group)


def _prepared(cfg: QueueConfig, topic: str | None, since: object
              ) -> tuple[list[str], EventMerger]:
    if topic is not None:
        validation.topic(topic)
    merger = EventMerger(start_ids(cfg.partitions, since), topic)
    return [k.events for k in partition_keys(cfg.name, cfg.partitions)], merger


class _Retrying:
    """Gives up on connection trouble once it has lasted ``retry_for`` seconds."""

    def __init__(self, retry_for: float | None) -> None:
        self.retry_for = retry_for
        self.since: float | None = None

    def failed(self, error: BaseException) -> float:
        """The pause before the next try; raises ``error`` when the time is up."""
        now = time.monotonic()
        self.since = self.since or now
        if self.retry_for is not None and now - self.since >= self.retry_for:
            raise error
        return 0.2

    def ok(self) -> None:
        """A read went through: the next trouble starts its own count."""
        self.since = None


def _follow_sync(client: SyncClient, cfg: QueueConfig, keys: list[str], merger: EventMerger,
                 follow: bool) -> Iterator[JobEvent]:
    block = _block_ms(cfg)
    retry = _Retrying(cfg.retry_for)
    if is_cluster(client):
        yield from _follow_sync_cluster(client, keys, merger, follow, block, retry)
        return
    everyone = list(range(len(keys)))
    waited = False
    while True:
        try:
            reply = command(client)(*read_command(
                keys, merger.read_ids(), block if waited else None))
        except _TROUBLE as error:
            time.sleep(retry.failed(error))
            continue
        retry.ok()
        read = _parse(keys, everyone, reply)
        for partition, entries, full in read:
            merger.add(partition, entries, full)
        yield from merger.ready()
        more = any(full for _, _, full in read)
        if not (more or follow):
            return
        waited = not more


def _follow_sync_cluster(client: SyncClient, keys: list[str], merger: EventMerger, follow: bool,
                         block: int, retry: _Retrying) -> Iterator[JobEvent]:
    def read_one(p: int, after: str, wait_ms: int | None) -> Read:
        return _parse([keys[p]], [p], command(client)(
            *read_command([keys[p]], [after], wait_ms)))

    pool = ThreadPoolExecutor(max_workers=len(keys), thread_name_prefix="sd-events")
    reads: dict[int, Future[Read]] = {}
    caught_up: set[int] = set()  # partitions read to their end once: blocking reads from now on
    try:
        while True:
            ids = merger.read_ids()
            for p in range(len(keys)):
                if p not in reads and (follow or p not in caught_up):
                    reads[p] = pool.submit(read_one, p, ids[p], block if p in caught_up else None)
            if not reads:
                return
            finished, _ = wait(list(reads.values()), return_when=FIRST_COMPLETED)
            for p, future in list(reads.items()):
                if future not in finished:
                    continue
                del reads[p]
                try:
                    read = future.result()
                except _TROUBLE as error:
                    time.sleep(retry.failed(error))
                    continue
                retry.ok()
                _apply(merger, read, caught_up, p)
            yield from merger.ready()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


async def _follow_async(client: AsyncClient, cfg: QueueConfig, keys: list[str],
                        merger: EventMerger, follow: bool) -> AsyncIterator[JobEvent]:
    block = _block_ms(cfg)
    retry = _Retrying(cfg.retry_for)
    # one read per partition on a cluster (different slots), one for all of them elsewhere
    groups = [[p] for p in range(len(keys))] if is_cluster(client) else [list(range(len(keys)))]

    async def read(group: list[int], wait_ms: int | None) -> Read:
        ids = merger.read_ids()
        reply = await command(client)(*read_command(
            [keys[p] for p in group], [ids[p] for p in group], wait_ms))
        return _parse([keys[p] for p in group], group, reply)

    reads: dict[int, asyncio.Task[Read]] = {}
    caught_up: set[int] = set()
    try:
        while True:
            for g, group in enumerate(groups):
                if g not in reads and (follow or g not in caught_up):
                    reads[g] = asyncio.ensure_future(read(group, block if g in caught_up else None))
            if not reads:
                return
            finished, _ = await asyncio.wait(list(reads.values()),
                                             return_when=asyncio.FIRST_COMPLETED)
            for g, task in list(reads.items()):
                if task not in finished:
                    continue
                del reads[g]
                try:
                    got = task.result()
                except _TROUBLE as error:
                    await asyncio.sleep(retry.failed(error))
                    continue
                retry.ok()
                _apply(merger, got, caught_up, g)
            for event in merger.ready():
                yield event
    finally:
        for task in reads.values():
            task.cancel()


class EventMethods:
    """``events`` of ``Queue`` (blocking)."""

    config: QueueConfig

    @property
    def client(self) -> SyncClient:
        """The queue's client (``Queue.client``)."""
        raise NotImplementedError

    def events(self, topic: str | None = None, since: object = None, *,
               follow: bool = True) -> Iterator[JobEvent]:
        """The queue's lifecycle events (``sd.JobEvent``), oldest first, then new ones as they
        come (``follow=False``: stop at the newest kept). ``topic``: only that topic's.
        ``since``: epoch ms or a ``datetime`` (events at or after it), or an event's ``cursor``
        (events after it); None: every event kept. Bad arguments raise ``ValidationError`` at
        once. Events are kept only with ``Queue(..., events=True)`` (docs/events.md)."""
        cfg = self.config
        keys, merger = _prepared(cfg, topic, since)
        agree_partitions_sync(self.client, cfg.url, cfg.name, cfg.partitions, cfg.retry_for,
                              cfg.events is True, cfg.events_bound)
        return _follow_sync(self.client, cfg, keys, merger, follow)


class AsyncEventMethods:
    """``events`` of ``AsyncQueue``."""

    config: QueueConfig

    @property
    def client(self) -> AsyncClient:
        """The queue's client (``AsyncQueue.client``)."""
        raise NotImplementedError

    def events(self, topic: str | None = None, since: object = None, *,
               follow: bool = True) -> AsyncIterator[JobEvent]:
        """The queue's lifecycle events; see ``Queue.events``
        (``async for event in aq.events(...)``; bad arguments raise at the call)."""
        cfg = self.config
        keys, merger = _prepared(cfg, topic, since)
        return self._events(keys, merger, follow)

    async def _events(self, keys: list[str], merger: EventMerger, follow: bool
                      ) -> AsyncIterator[JobEvent]:
        cfg = self.config
        await agree_partitions_async(self.client, cfg.url, cfg.name, cfg.partitions,
                                     cfg.retry_for, cfg.events is True, cfg.events_bound)
        async for event in _follow_async(self.client, cfg, keys, merger, follow):
            yield event
