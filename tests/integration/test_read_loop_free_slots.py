"""A partition's read loop whose free slots other loops took while it waited for one per topic
reads nothing and waits for a slot, it does not crash (consume/reading.py)."""

from __future__ import annotations

import asyncio
import logging
import random
import uuid

import pytest

import streamdelay as sd

TOPICS = [f"t{i}" for i in range(5)]


def test_read_loops_sharing_few_slots_over_many_topics_do_not_crash(
        redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    queue = sd.Queue(f"rl-{uuid.uuid4().hex[:8]}", url=redis_url, partitions=4)
    worker = sd.Worker(queue, concurrency=4, dispatch=True, block=0.05)
    done: list[str] = []

    async def handler(job: sd.Job[dict[str, float]]) -> None:
        await asyncio.sleep(job.body["s"])
        done.append(job.id)

    for topic in TOPICS:
        worker.handler(topic)(handler)
    rng = random.Random(7)
    queue.enqueue_many([sd.JobSpec(TOPICS[i % 5], {"s": rng.random() * 0.06}) for i in range(300)])
    with caplog.at_level(logging.WARNING, logger="streamdelay"):
        asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
    crashed = [r for r in caplog.records if r.exc_info or "crash" in r.getMessage()]
    assert not crashed, crashed[0].getMessage()
    assert len(done) == 300
