"""Job options on a real 3-primary Redis Cluster (docs/keys.md#job-options): keyed jobs land in
their key's partition (one slot), the queue's staged flag is written in partition 0's slot in
the same round trip as an enqueue to another node, and get, cancel and a worker's ack find a
keyed job by id, with no CROSSSLOT error, from the sync and the async face."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from redis.cluster import key_slot

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.support.cluster import LocalCluster, spread_queue_name

pytestmark = pytest.mark.timeout(180)
PARTITIONS = 6




def test_keyed_jobs_live_in_their_keys_partition_on_every_node(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    keys = [f"tenant-{n}" for n in range(24)]
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as q:
        made = q.enqueue_many([sd.JobSpec("t", i, key=key, priority=i % 10, delay=60)
                               for i, key in enumerate(keys)])
        one = [q.enqueue("u", i, key=key, expires=30, delay=60) for i, key in enumerate(keys)]
        client = q.client
        for i, result in enumerate([*made, *one]):
            key = keys[i % len(keys)]
            part = partition_of(result.id, PARTITIONS)
            assert result.id.startswith(f"{{{key}}}") and part == partition_of(key, PARTITIONS)
            pk = PartitionKeys(name, part)
            assert key_slot(pk.opts.encode()) == key_slot(pk.jobs.encode())
            assert client.hexists(pk.opts, result.id)
        flag = PartitionKeys(name, 0).staged
        assert client.hgetall(flag) == {b"t": b"1", b"u": b"1"}
        assert {partition_of(r.id, PARTITIONS) for r in made} - {0}  # other nodes too
        info = q.get(made[3].id)
        assert info is not None and (info.priority, info.key) == (3, keys[3])
        assert q.cancel(made[4].id) and q.get(made[4].id) is None
        assert not client.hexists(PartitionKeys(name, partition_of(made[4].id, PARTITIONS)
                                                ).opts, made[4].id)


def test_async_bursts_and_a_worker_settle_keyed_jobs(cluster: LocalCluster) -> None:
    name = f"ko{uuid.uuid4().hex[:8]}"

    async def burst() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(name, url=cluster.url, partitions=PARTITIONS) as q:
            return await asyncio.gather(*(q.enqueue("t", i, key=f"k{i % 7}", priority=7)
                                          for i in range(30)))

    results = asyncio.run(burst())
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as q:
        seen: list[str] = []
        worker = sd.Worker(q, block=0.05)
        worker.handler("t")(lambda job: seen.append(job.id))
        worker.run(until_idle=True)
        assert sorted(seen) == sorted(r.id for r in results)
        for part in range(PARTITIONS):
            assert q.client.hlen(PartitionKeys(name, part).opts) == 0  # acked: dropped
        assert q.client.hgetall(PartitionKeys(name, 0).staged) == {b"t": b"1"}


def test_the_ready_listing_pages_through_lanes_on_every_node(cluster: LocalCluster) -> None:
    """The ready listing's lanes (``listStaged``) on partitions spread over 3 primaries: one
    call per partition in the round trip of the streams' page, no CROSSSLOT error."""
    name = spread_queue_name(cluster, PARTITIONS)
    keys = [f"tenant-{n}" for n in range(12)]
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as q:
        made = [r.id for r in q.enqueue_many([sd.JobSpec("t", i, key=key, priority=i % 10)
                                              for i, key in enumerate(keys * 2)])]
        plain = [r.id for r in q.enqueue_many([sd.JobSpec("p", i) for i in range(4)])]

        async def promote_all() -> None:
            dispatcher = sd.Dispatcher(q.config)
            try:
                for part in range(PARTITIONS):
                    await dispatcher.promote_once(PartitionKeys(name, part))
            finally:
                await dispatcher.close()

        asyncio.run(promote_all())
        seen, cursor = [], None
        for _ in range(50):
            page = q.jobs(state="ready", limit=5, cursor=cursor)
            seen += [j.id for j in page.jobs]
            cursor = page.cursor
            if cursor is None:
                break
        assert sorted(seen) == sorted(made + plain)


def test_waiting_listing_and_callbacks_with_options_on_every_node(cluster: LocalCluster
                                                                   ) -> None:
    """The waiting listing pages through every node (docs/workflows.md#listing-waiting-jobs);
    a batch with a keyed, prioritised callback lives in the key's slot, its callback is
    written there with its options and partition 0's staged flag (another slot) is set by the
    batch's call (docs/workflows.md#callback-options)."""
    name = spread_queue_name(cluster, PARTITIONS)
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS) as q:
        q.enqueue("t", id="root", delay=600)
        kids = [f"kid{i}" for i in range(12)]
        for kid in kids:
            q.enqueue("t", id=kid, after=["root"])
        assert len({partition_of(k, PARTITIONS) for k in kids}) > 2
        found: list[str] = []
        cursor = None
        while True:
            page = q.jobs("waiting", limit=5, cursor=cursor)
            found.extend(j.id for j in page.jobs)
            if (cursor := page.cursor) is None:
                break
        assert sorted(found) == sorted(kids)
        key = next(f"k{i}" for i in range(100) if partition_of(f"k{i}", PARTITIONS))
        info = q.batch([], id="b", on_complete=sd.JobSpec("cb", key=key, priority=8))
        assert info.id == "{" + key + "}b" and info.state == "done"
        callback = q.get(info.id + "@2")
        assert callback is not None and (callback.priority, callback.key) == (8, key)
        assert q.client.hget(PartitionKeys(name, 0).staged, "cb") == b"1"
