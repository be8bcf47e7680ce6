"""The Worker's shutdown hand-back on a Cluster whose partitions live on different nodes, one of
them down: the partitions whose node answers are handed back and counted, whatever the others
do (docs/design.md#the-consumer-core)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import streamdelay as sd
from streamdelay.consume import upkeep_loops as upkeep
from streamdelay.consume.delivery import Delivery
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import partition_keys, partition_of
from streamdelay.protocol.scripts import script
from tests.support.cluster import LocalCluster

PARTITIONS = 6


def test_shutdown_release_counts_the_partitions_whose_node_answered() -> None:
    with LocalCluster(primaries=3) as local:
        queue = sd.Queue("rel", url=local.url, partitions=PARTITIONS)
        c = queue.client
        for i in range(4 * PARTITIONS):
            queue.enqueue("t", id=f"j{i}")
        deliveries: list[Delivery] = []
        for keys in partition_keys(queue.name, PARTITIONS):
            run_step_sync(c, script("registerGroup").call(keys.script_keys(), ["workers", "t"]))
            deadline = time.monotonic() + 3
            while c.zcard(keys.delayed) and time.monotonic() < deadline:
                run_step_sync(c, script("promoteDue").call(keys.script_keys(), [100]))
            read: Any = c.xreadgroup("workers", "c1", {keys.stream("t"): ">"})
            for _, rows in read or []:
                for eid, fields in rows:
                    job_id = fields[b"id"].decode()
                    assert partition_of(job_id, PARTITIONS) == keys.partition
                    deliveries.append(Delivery(keys.partition, "t", eid.decode(), job_id))
        assert len(deliveries) == 4 * PARTITIONS
        down = local.owner_of(partition_keys(queue.name, PARTITIONS)[1].stream("t"))
        alive = [d for d in deliveries
                 if local.owner_of(partition_keys(queue.name, PARTITIONS)[d.partition]
                                   .stream("t")) is not down]
        assert 0 < len(alive) < len(deliveries)  # the partitions span the nodes
        down.kill()
        worker = sd.Worker(queue, group="workers", consumer="c1", dispatch=False)

        async def release() -> None:
            try:
                await upkeep._release(worker, deliveries, 0)
            finally:
                await worker.client.aclose()

        asyncio.run(release())
        # the nodes that answered took their jobs back (at once, not an attempt) and say so
        assert worker.counts.get("released", 0) == len(alive)
