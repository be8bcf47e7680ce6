"""Job options under ``replicas=1`` (docs/guarantees.md#durability): the ``markStaged`` call sent
before an enqueue to another partition rides in the same durable step, so one ``WAIT`` covers
both, from the one-job path, ``enqueue_many`` and an ``AsyncQueue`` burst. A primary and its
replica, real servers."""

from __future__ import annotations

import asyncio
import uuid
import zlib

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.system.test_durability import Pair

pytestmark = pytest.mark.timeout(120)




def test_staged_jobs_on_other_partitions_are_confirmed_by_the_replica(pair: Pair) -> None:
    key = next(f"k{n}" for n in range(100) if zlib.crc32(f"k{n}".encode()) % 3 == 1)
    name = f"dk{uuid.uuid4().hex[:8]}"
    url = pair.primary.url
    with sd.Queue(name, url=url, partitions=3, replicas=1) as q:
        q.client.config_resetstat()
        one = q.enqueue("a", 1, key=key, delay=60)
        [many] = q.enqueue_many([sd.JobSpec("b", 2, key=key, priority=1, delay=60)])

        async def burst() -> list[sd.EnqueueResult]:
            async with sd.AsyncQueue(name, url=url, partitions=3, replicas=1) as aq:
                return list(await asyncio.gather(*(aq.enqueue("c", i, key=key, delay=60)
                                                   for i in range(5))))

        results = [one, many, *asyncio.run(burst())]
        waits = int(q.client.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
        assert waits >= 3  # each of the three faces waited
    with pair.replica.client() as replica:  # what the replica has, once confirmed
        assert replica.hgetall(PartitionKeys(name, 0).staged) == {
            b"a": b"1", b"b": b"1", b"c": b"1"}
        for result in results:
            assert partition_of(result.id, 3) == 1
            assert replica.hexists(PartitionKeys(name, 1).opts, result.id)
