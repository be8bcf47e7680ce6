"""A queue consumed only by ``q.reserve`` shows in what the dashboard reads (``readLateness``:
docs/dashboard.md#lateness) as a worker's does: each hand-out by topic and, for a staged topic's
job, by priority; each outcome in the throughput (docs/design.md#observer). The driver contract
suite checks the same for every driver on a plain topic (test_consumer_drivers.py)."""

from __future__ import annotations

import asyncio
import logging

import pytest

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.telemetry.lateness import lateness_plan
from tests.integration.test_pull import promote


def test_a_staged_topic_taken_by_reserve_counts_by_priority(redis_url: str, queue_name: str
                                                            ) -> None:
    with sd.Queue(queue_name, url=redis_url, backoff=[0]) as q:
        q.enqueue_many([sd.JobSpec("s", n, id=f"p{n}", key=f"k{n}", priority=7)
                        for n in range(3)] + [sd.JobSpec("s", 9, id="low", key="k9",
                                                         priority=2, max_attempts=1)])
        promote(q, 4)
        taken = []
        while len(taken) < 4:
            taken += q.reserve("s", count=4, wait=2)
        for r in taken:
            if r.id.endswith("low"):  # a keyed job's id: {k9}low
                assert r.fail("boom") == "dead"
            else:
                r.ack()
    # closed: what was counted is flushed
    with sd.Queue(queue_name, url=redis_url) as reader:
        window = drive_sync(reader.client, lateness_plan(queue_name, 5), 5.0)
    assert sum(window.merged("s")) == 4
    assert sum(window.merged("s", priority="7")) == 3
    assert sum(window.merged("s", priority="2")) == 1
    throughput = window.throughput("s")
    assert (sum(throughput["ok"]), sum(throughput["dead"])) == (3, 1)


def test_an_async_reserve_caller_logs_its_starts_and_settles(
        redis_url: str, queue_name: str, caplog: pytest.LogCaptureFixture) -> None:
    """The observer's debug lines (logger ``streamdelay.consumer``), with the job's fields."""
    with sd.Queue(queue_name, url=redis_url) as producer:
        producer.reserve("t")  # registers the group before the job is promoted
        producer.enqueue("t", 1, id="j1")
        promote(producer)

    async def main() -> None:
        async with sd.AsyncQueue(queue_name, url=redis_url) as q:
            [r] = await q.reserve("t", wait=2)
            await r.ack()

    with caplog.at_level(logging.DEBUG, logger="streamdelay.consumer"):
        asyncio.run(main())
    lines = [(rec.getMessage(), getattr(rec, "job_id", None)) for rec in caplog.records
             if rec.name == "streamdelay.consumer"]
    assert lines == [("job started", "j1"), ("job handled", "j1")]
