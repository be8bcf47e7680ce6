"""``AsyncQueue.enqueue_prepared`` sends prepared jobs as ``enqueue_many`` does
(docs/producer.md#enqueue_many); the pure half is tests/unit/test_enqueue_prepared.py."""

from __future__ import annotations

import asyncio

import streamdelay as sd
from streamdelay.client.enqueuing import prepare_values
from tests.unit.test_enqueue_prepared import SPECS, values_of


def test_enqueue_prepared_writes_like_enqueue_many(redis_url: str, queue_name: str) -> None:
    async def run() -> None:
        aq = sd.AsyncQueue(queue_name, url=redis_url)
        try:
            prepared = [prepare_values(aq.config, *values_of(spec)) for spec in SPECS[:2]]
            results = await aq.enqueue_prepared(prepared)
            assert [(r.id, r.created) for r in results] == [("x", True), ("y", True)]
            again = await aq.enqueue_many(SPECS[:2])
            assert [r.created for r in again] == [False, False]
            job = await aq.get("y")
            assert job is not None and job.body == b"raw" and job.max_attempts == 3
        finally:
            await aq.close()

    asyncio.run(run())
