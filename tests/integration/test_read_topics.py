"""A worker of several topics with a backlog in one of them: every read asks every topic, so a
free slot never waits a whole block time on the idle topics (docs/worker.md#concurrency)."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

import streamdelay as sd


@pytest.mark.parametrize("concurrency", [4, 2])  # 2: fewer slots than topics
def test_a_backlog_in_one_topic_never_waits_a_block_on_the_idle_topics(
        queue: sd.Queue, concurrency: int) -> None:
    worker = sd.Worker(queue, concurrency=concurrency, block=5.0)
    starts: list[float] = []

    @worker.handler("busy")
    async def busy(job: sd.Job) -> None:
        starts.append(time.monotonic())
        await asyncio.sleep(0.01)

    for topic in ("idle-a", "idle-b"):
        worker.handler(topic)(lambda job: None)
    queue.enqueue_many([sd.JobSpec("busy", None) for _ in range(30)])
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 120))
    assert len(starts) == 30
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    # Before the fix a read of only the idle topics blocked the 5 s block time while the
    # busy topic had ready jobs and a slot was free.
    assert max(gaps) < 2.5, gaps
