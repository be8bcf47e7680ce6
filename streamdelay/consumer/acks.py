"""Acknowledgements of handled deliveries, batched per partition and kept until written.

The worker queues an acknowledgement when a handler returns; the ack loop writes them in
``ackJobs`` calls of at most ``ACK_BATCH`` deliveries. A batch leaves the queue only once its
call succeeded: a call that fails, or a flush cancelled by shutdown, leaves it for the next
flush (``ackJobs`` is safe to run twice).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

ACK_BATCH = 500


class PendingAcks:
    """Acknowledgements not yet written: per partition, flat ``topic, job id, entry id``."""

    def __init__(self) -> None:
        self._flat: dict[int, list[str]] = {}

    def __bool__(self) -> bool:
        """True while some acknowledgement is not written yet."""
        return bool(self._flat)

    def add(self, partition: int, topic: str, job_id: str, entry_id: str) -> None:
        """Queue one acknowledgement."""
        self._flat.setdefault(partition, []).extend((topic, job_id, entry_id))

    def entries(self, partition: int) -> set[tuple[str, str]]:
        """``(topic, entry id)`` of the acknowledgements of ``partition`` not written yet."""
        flat = self._flat.get(partition, [])
        return {(flat[i], flat[i + 2]) for i in range(0, len(flat), 3)}

    async def flush(self, send: Callable[[int, list[str]], Awaitable[None]]) -> None:
        """Write everything queued, ``send(partition, flat_batch)`` per batch; a batch is
        forgotten only after its ``send`` returned (an exception or a cancel keeps it)."""
        while self._flat:
            partition = next(iter(self._flat))
            flat = self._flat[partition]
            batch = flat[:ACK_BATCH * 3]
            await send(partition, batch)
            del flat[:len(batch)]  # acks queued meanwhile were appended after the batch
            if not flat:
                del self._flat[partition]
