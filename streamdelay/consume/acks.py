"""Acknowledgements of handled deliveries, batched per partition and kept until written.

The worker queues an acknowledgement when a handler returns; the ack loop writes them in
``ackJobs`` calls of at most ``ACK_BATCH`` deliveries and about ``ACK_BYTES`` of their job records
(``ackJobs`` reads and frees each record, so a batch of big jobs is cut short; always at least
one delivery, see docs/worker.md). A batch leaves the queue only once its
call succeeded: a call that fails, or a flush cancelled by shutdown, leaves it for the next
flush (``ackJobs`` is safe to run twice). A job with its own ``keep_done`` is queued apart from
the others of its partition: one ``ackJobs`` call takes one keep_done
(docs/producer.md#keep_done), so the plain calls stay as they were.

``AckLoop`` owns the queue: handlers' deliveries are added through it, and its loop (one task of
the worker) writes them whenever it is woken; the read loops only read which are queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

ACK_BATCH = 500
ACK_BYTES = 1 << 20
# where an acknowledgement waits: its partition (the plain case, the queue's keep_done), or
# (partition, keep_done ms) for a job with its own keep_done: the plain path keys by int, as
# before per-job keep_done existed
Slot = int | tuple[int, int]


class PendingAcks:
    """Acknowledgements not yet written: per slot (partition, keep_done), flat ``topic, job
    id, entry id``."""

    def __init__(self) -> None:
        self._flat: dict[Slot, list[str]] = {}
        self._sizes: dict[Slot, list[int]] = {}
        # per slot: (position in its queue, keep_result ms, encoded result) of the kept
        # results (docs/results.md); acks without a result add nothing here
        self._results: dict[Slot, list[tuple[int, int, bytes]]] = {}
        # per slot, one per acknowledgement: when its delivery was read fresh with no
        # heartbeat since (server clock ms; 0: not known), for ackJobs (docs/events.md#started)
        self._reads: dict[Slot, list[int]] = {}

    def __bool__(self) -> bool:
        """True while some acknowledgement is not written yet."""
        return bool(self._flat)

    def add(self, partition: int, topic: str, job_id: str, entry_id: str, size: int = 0,
            result: tuple[int, bytes] | None = None, read_ms: int = 0,
            keep_done_ms: int | None = None) -> None:
        """Queue one acknowledgement; ``size`` is the byte length of the job's record,
        ``result`` the ``(keep_result ms, encoded result)`` to keep with it, ``read_ms`` when
        its delivery was read fresh with no heartbeat since (0: not known), ``keep_done_ms``
        the job's own keep_done (None: the queue's)."""
        slot: Slot = partition if keep_done_ms is None else (partition, keep_done_ms)
        self._reads.setdefault(slot, []).append(read_ms)
        sizes = self._sizes.setdefault(slot, [])
        if result is not None:
            self._results.setdefault(slot, []).append((len(sizes), *result))
            size += len(result[1])
        self._flat.setdefault(slot, []).extend((topic, job_id, entry_id))
        sizes.append(size)

    def entries(self, partition: int) -> set[tuple[str, str]]:
        """``(topic, entry id)`` of the acknowledgements of ``partition`` not written yet."""
        flat = self._flat.get(partition, [])
        found = {(flat[i], flat[i + 2]) for i in range(0, len(flat), 3)}
        if len(self._flat) > 1:  # maybe jobs with their own keep_done too
            for slot, kept in self._flat.items():
                if type(slot) is tuple and slot[0] == partition:
                    found.update((kept[i], kept[i + 2]) for i in range(0, len(kept), 3))
        return found

    async def flush(self, send: Callable[..., Awaitable[None]]) -> None:
        """Write everything queued, ``send(partition, flat_batch)`` per batch (with a third
        argument, the ``ackJobs`` result values, when the batch keeps results; ``keep_done_ms=``
        for jobs with their own keep_done); a batch is forgotten only after its ``send``
        returned (an exception or a cancel keeps it)."""
        while self._flat:
            slot = next(iter(self._flat))
            partition, keep_done_ms = (slot, None) if isinstance(slot, int) else slot
            flat, sizes = self._flat[slot], self._sizes[slot]
            count = batch_length(sizes)
            reads = self._reads[slot]
            dated = reads[:count]  # sent only when some delivery has one: docs/events.md#started
            extra: dict[str, Any] = {"reads": dated} if any(dated) else {}
            if keep_done_ms is not None:
                extra["keep_done_ms"] = keep_done_ms
            kept = self._results.get(slot)
            if kept:
                values: list[Any] = []
                for position, keep_ms, data in kept:
                    if position < count:
                        values.extend((position + 1, keep_ms, data))
                await send(partition, flat[:count * 3], values, **extra)
                rest = [(p - count, k, d) for p, k, d in kept if p >= count]
                if rest:
                    self._results[slot] = rest
                else:
                    del self._results[slot]
            else:
                await send(partition, flat[:count * 3], **extra)
            del flat[:count * 3]  # acks queued meanwhile were appended after the batch
            del sizes[:count]
            del reads[:count]
            if not flat:
                del self._flat[slot], self._sizes[slot], self._reads[slot]


def batch_length(sizes: list[int]) -> int:
    """How many of the queued acknowledgements (record sizes in order) go into the next call:
    at most ``ACK_BATCH`` and about ``ACK_BYTES`` of records, always at least one."""
    total = 0
    for count, size in enumerate(sizes[:ACK_BATCH]):
        total += size
        if count and total > ACK_BYTES:
            return count
    return min(len(sizes), ACK_BATCH)


class AckLoop:
    """The worker's acknowledgements: the queue (``pending``), the event that wakes the loop, and
    the loop that writes them with ``send`` (``settling.send_acks``)."""

    def __init__(self, send: Callable[..., Awaitable[None]]) -> None:
        self.pending = PendingAcks()
        self._send = send
        self._wake = asyncio.Event()

    def add(self, partition: int, topic: str, job_id: str, entry_id: str, size: int = 0,
            result: tuple[int, bytes] | None = None, read_ms: int = 0,
            keep_done_ms: int | None = None) -> None:
        """Queue one acknowledgement (see ``PendingAcks.add``) and wake the loop."""
        self.pending.add(partition, topic, job_id, entry_id, size, result, read_ms,
                         keep_done_ms)
        self._wake.set()

    def renew(self) -> None:
        """A fresh wake-up event for a new ``serve`` (an event belongs to its first loop)."""
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Wake the loop (at shutdown: it may be cancelled while it waits)."""
        self._wake.set()

    async def run(self) -> None:
        """Write what is queued each time something is added, until cancelled."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.flush()

    async def flush(self) -> None:
        """Write everything queued now."""
        await self.pending.flush(self._send)
