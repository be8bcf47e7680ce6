"""The worker's pending acknowledgements with per-job ``keep_done`` (consume/acks.py,
docs/producer.md#keep_done): jobs with their own value are sent in calls of their own, one per
value, with ``keep_done_ms``; plain ones as before (no such argument); ``entries`` sees both."""

from __future__ import annotations

import asyncio
from typing import Any

from streamdelay.consume.acks import PendingAcks


def test_jobs_with_their_own_keep_done_are_sent_apart() -> None:
    pending = PendingAcks()
    pending.add(0, "t", "plain-1", "1-0")
    pending.add(0, "t", "kept-1", "2-0", keep_done_ms=60_000)
    pending.add(0, "t", "plain-2", "3-0", result=(1000, b"j1"))
    pending.add(0, "t", "gone-1", "4-0", keep_done_ms=0)
    pending.add(1, "t", "kept-2", "5-0", keep_done_ms=60_000)
    pending.add(0, "t", "kept-3", "6-0", keep_done_ms=60_000, result=(1000, b"j2"))
    assert pending.entries(0) == {("t", f"{n}-0") for n in (1, 2, 3, 4, 6)}
    assert pending.entries(1) == {("t", "5-0")}
    sent: list[tuple[int, list[str], list[Any] | None, dict[str, Any]]] = []

    async def send(partition: int, flat: list[str], results: list[Any] | None = None,
                   **extra: Any) -> None:
        sent.append((partition, list(flat), results, extra))

    asyncio.run(pending.flush(send))
    assert not pending and pending.entries(0) == set()
    calls = {(p, tuple(flat[1::3])): (r, e) for p, flat, r, e in sent}
    assert calls == {
        (0, ("plain-1", "plain-2")): ([2, 1000, b"j1"], {}),
        (0, ("kept-1", "kept-3")): ([2, 1000, b"j2"], {"keep_done_ms": 60_000}),
        (0, ("gone-1",)): (None, {"keep_done_ms": 0}),
        (1, ("kept-2",)): (None, {"keep_done_ms": 60_000})}
