"""Results on a Redis Cluster (docs/results.md): each job's result and wake list live in its
partition's slot, waiters of every partition are woken by their settle scripts, and a waiter
re-arms across a failover of the primary its job lives on."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.cluster import LocalCluster, is_primary, replica_of, spread_queue_name, wait_for

PARTITIONS = 6
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """One cluster of 3 primaries with a replica each, for this module."""
    with LocalCluster(primaries=3, replicas=1) as local:
        yield local


def test_waiters_of_every_partition_and_across_a_failover(cluster: LocalCluster) -> None:
    name = spread_queue_name(cluster, PARTITIONS)
    ids = [f"job-{i}" for i in range(24)]
    with sd.Queue(name, url=cluster.url, partitions=PARTITIONS, keep_result=60,
                  retry_for=30) as q:
        q.enqueue_many(sd.JobSpec("t", {"i": i}, id=job_id) for i, job_id in enumerate(ids))
        assert len({partition_of(job_id, PARTITIONS) for job_id in ids}) == PARTITIONS
        victim = cluster.owner_of(PartitionKeys(name, partition_of(ids[0], PARTITIONS)).jobs)
        replica = replica_of(cluster, victim)
        time.sleep(0.5)  # the enqueue reached the replicas

        async def main() -> list[sd.JobResult | None]:
            async with sd.AsyncQueue(name, url=cluster.url, partitions=PARTITIONS,
                                     retry_for=30) as aq:
                waiting = [asyncio.ensure_future(aq.result(job_id, timeout=120))
                           for job_id in ids]
                await asyncio.sleep(0.5)
                assert not any(w.done() for w in waiting)
                victim.kill()  # every waiter of its partitions loses its connection
                await asyncio.to_thread(wait_for, lambda: is_primary(replica), 30,
                                        "the replica took over")
                worker = sd.Worker(q, group="g", block=0.2)

                @worker.handler("t")
                def handle(job: sd.Job) -> dict[str, int]:
                    return {"double": job.body["i"] * 2}

                await asyncio.wait_for(worker.serve(until_idle=True), 90)
                return list(await asyncio.gather(*waiting))

        found = asyncio.run(main())
        assert [r.id if r else None for r in found] == ids
        assert [r.value for r in found if r] == [{"double": i * 2} for i in range(len(ids))]
        assert q.result(ids[-1]).state == "succeeded"  # type: ignore[union-attr]
