"""Lifecycle events on a real Redis Cluster (3 primaries): each partition's events stream sits
in its partition's slot, the scripts write there, and ``events`` follows every partition at
once (one blocking read per partition, sync and async) and resumes from a cursor."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import partition_keys
from tests.support.cluster import LocalCluster, keys_per_node, spread_queue_name

pytestmark = pytest.mark.timeout(120)
PARTITIONS = 6




def test_events_follow_every_partition_of_a_cluster(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS, events=True) as q:
        q.enqueue("t", 0, id="before", delay=3600)
        seen: list[sd.JobEvent] = []
        done = threading.Event()

        def follow() -> None:
            for event in q.events(topic="t"):
                seen.append(event)
                if len(seen) == 13:
                    done.set()
                    return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        time.sleep(0.5)  # every partition's blocking read is out
        started = time.monotonic()
        ids = [f"job-{i}" for i in range(12)]
        for job_id in ids:
            q.enqueue("t", 0, id=job_id, delay=3600)
        assert done.wait(15), len(seen)
        assert time.monotonic() - started < 5  # woken by the writes, not by read timeouts
        assert sorted(e.id for e in seen) == sorted(["before", *ids])
        assert len({e.partition for e in seen}) >= 3
        per_node = keys_per_node(cluster, f"sd:{{{name}#*}}:events")
        assert len(per_node) == 3, per_node
        merged = list(q.events(topic="t", follow=False))
        rest = [e.id for e in q.events(topic="t", since=merged[5].cursor, follow=False)]
        assert rest == [e.id for e in merged[6:]]

        worker = sd.Worker(q, concurrency=4)
        worker.handler("t")(lambda job: None)
        for job_id in ["before", *ids]:  # nothing delayed left: the worker runs until idle
            assert q.cancel(job_id)
        q.enqueue("t", 0, id="run-me")
        worker.run(until_idle=True)
        kinds = [e.kind for e in q.events(follow=False) if e.id == "run-me"]
        assert kinds == ["enqueued", "promoted", "started", "succeeded"]
        assert len(partition_keys(name, PARTITIONS)) == PARTITIONS


def test_async_events_follow_a_cluster(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)

    async def main() -> list[str]:
        async with sd.AsyncQueue(name, url=cluster.url, partitions=PARTITIONS,
                                 events=True) as q:
            got: list[str] = []

            async def follow() -> None:
                async for event in q.events():
                    got.append(event.id)
                    if len(got) == 8:
                        return

            task = asyncio.ensure_future(follow())
            await asyncio.sleep(0.5)
            for i in range(8):
                await q.enqueue("t", 0, id=f"a{i}", delay=3600)
            await asyncio.wait_for(task, 15)
            return got

    assert sorted(asyncio.run(main())) == [f"a{i}" for i in range(8)]
