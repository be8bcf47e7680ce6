"""A Worker's heartbeat never takes back a delivery another consumer took over
(docs/worker.md#ttr-and-heartbeats, docs/guarantees.md#never-twice-at-once): the touch script
checks the owner (lua/touchJobs-6.lua), the worker marks its run lost and ignores its result.

The takeover that keeps the stream entry is a hand-over (``claim(to=...)``): the same entry,
another owner, so only that owner check stands between a stale heartbeat and the entry.
"""

from __future__ import annotations

import asyncio
import time

import pytest

import streamdelay as sd

pytestmark = pytest.mark.timeout(60)


async def _until(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


def test_a_heartbeat_does_not_take_back_a_delivery_handed_to_another_consumer(
        queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="w-1", ttr=3)
    # its own reclaim out of the way: awake stays silent for the whole test
    worker = sd.Worker(queue, consumer="sleepy", block=0.1, reclaim_interval=600)
    started, release = asyncio.Event(), asyncio.Event()

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        started.set()
        await release.wait()

    async def scenario() -> None:
        serving = asyncio.ensure_future(worker.serve())
        try:
            await asyncio.wait_for(started.wait(), 20)
            [delivery] = list(worker.inflight.values())
            claimed = await asyncio.to_thread(queue.claim, "workers", topic="t", min_idle=0,
                                              to="awake")
            assert claimed.moved == ["w-1"], claimed
            # the next heartbeat (ttr / 3 after the last) finds it gone: lost, not taken back
            await _until(lambda: delivery.lost, 10, "the run marked lost")
            info = await asyncio.to_thread(queue.get, "w-1")
            assert info is not None and (info.state, info.consumer) == ("reserved", "awake")
            touched = delivery.last_touch
            await _until(lambda: delivery.last_touch > touched, 10, "one more heartbeat")
            info = await asyncio.to_thread(queue.get, "w-1")
            assert info is not None and info.consumer == "awake", info
        finally:
            release.set()
            await _until(lambda: not worker.inflight, 10, "the handler's end")
            worker.stop()
            await serving

    asyncio.run(scenario())
