"""Promote due jobs in a test without a running dispatcher.

A job enqueued with no delay is due at the next whole millisecond of the server clock (a delay
counts from the enqueue's microsecond, rounded up: docs/guarantees.md), so a ``promote_once``
sent at once may find it not yet due. ``promote_due`` calls again until ``expected`` jobs moved.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from streamdelay import Dispatcher
from streamdelay.io.runner import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script


async def promote_due(dispatcher: Dispatcher, keys: PartitionKeys, expected: int = 1,
                      timeout: float = 2.0) -> int:
    """Run ``promoteDue`` on ``keys`` until ``expected`` jobs moved; returns how many moved."""
    moved = 0
    deadline = time.monotonic() + timeout
    while moved < expected:
        moved += (await dispatcher.promote_once(keys)).moved
        if moved < expected:
            assert time.monotonic() < deadline, f"only {moved} of {expected} jobs became due"
            await asyncio.sleep(0.002)
    return moved


def promote_due_sync(client: Any, keys: PartitionKeys, expected: int = 1,
                     timeout: float = 2.0) -> int:
    """``promote_due`` without a dispatcher: calls ``promoteDue`` on ``keys`` (batches of
    1,000) over ``client`` until ``expected`` jobs moved; returns how many moved."""
    moved = 0
    deadline = time.monotonic() + timeout
    while moved < expected:
        moved += run_step_sync(client, script("promoteDue").call(keys.script_keys(), [1000]))[0]
        if moved < expected:
            assert time.monotonic() < deadline, f"only {moved} of {expected} jobs became due"
            time.sleep(0.002)
    return moved
