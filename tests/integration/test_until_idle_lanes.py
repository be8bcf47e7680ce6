"""``Worker.run(until_idle=True)`` (docs/worker.md) and a staged topic's lanes
(docs/priorities.md): jobs of a key held back by its key rate wait, ready, in their lane, with
nothing delayed, nothing in the stream and nothing in flight. The idle watch must count them
(the ``ready`` lane tally, consume/upkeep_loops.py ``idle_watch``) or the worker stops with them
left, as it did on a cluster. Real redis-server, one and three partitions."""

from __future__ import annotations

import pytest

import streamdelay as sd

pytestmark = pytest.mark.timeout(60)
T = "tenant.job"


@pytest.mark.parametrize("partitions", [1, 3])
def test_until_idle_waits_for_keyed_jobs_held_in_their_lanes(redis_url: str, queue_name: str,
                                                             partitions: int) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=partitions) as q:
        q.limit(T, key_rate="1/s")  # one start a second per key: the rest wait in the lane
        keys = ["acme", "bolt", "crux"]
        for key in keys:
            for i in range(3):
                q.enqueue(T, i, id=f"{key}-{i}", key=key)
        assert q.stats().topics[T].staged
        worker = sd.Worker(q, block=0.05)
        ran: list[str] = []

        @worker.handler(T)
        def handle(job: sd.Job) -> None:
            ran.append(job.id)

        worker.run(until_idle=True)
        assert len(ran) == 9, sorted(ran)  # not only each key's first job
        assert q.stats().topics[T].ready == 0
