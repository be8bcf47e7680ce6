"""On Redis Cluster the calls of one enqueue round keep their order within a partition.

Cluster pipelines refuse EVALSHA, so a round's calls go out one by one; the asyncio face used to
send them all at once, and a small call overtook a big one of the same partition (the server
runs whichever command it has read in full first). Here the first call carries one 8 MiB job
and the second one small job with the same id: in order, the first wins.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

import streamdelay as sd
from tests.support.cluster import LocalCluster

pytestmark = pytest.mark.timeout(120)
BIG = 8 << 20  # one job over the byte budget of a call: the next job goes in a second call




def specs() -> list[sd.JobSpec]:
    """A big job with id ``dup``, then ``dup`` again, small, in the next call."""
    return [sd.JobSpec("t", b"F" * BIG, id="dup", delay=600),
            sd.JobSpec("t", b"second", id="dup", delay=600)]


async def warm_up(queue: sd.AsyncQueue) -> None:
    """Scripts loaded and several open connections to the partition's node (so no call of the
    round waits for a connection to be made while the others go)."""
    await queue.enqueue("t", b"warm", id="warm")
    await asyncio.gather(*(queue.get("warm") for _ in range(4)))


def assert_first_call_won(results: list[sd.EnqueueResult], queue: sd.Queue) -> None:
    """The first ``dup`` was created and the second found it; the stored body is the first's."""
    assert [r.created for r in results] == [True, False]
    info = queue.get("dup")
    assert info is not None and info.body == b"F" * BIG


async def many_async(url: str, name: str) -> list[sd.EnqueueResult]:
    """``AsyncQueue.enqueue_many`` of ``specs()``."""
    async with sd.AsyncQueue(name, url=url, max_body_bytes=BIG) as queue:
        await warm_up(queue)
        return await queue.enqueue_many(specs())


async def coalesced(url: str, name: str) -> list[sd.EnqueueResult]:
    """``specs()`` as concurrent ``AsyncQueue.enqueue`` calls (one round)."""
    async with sd.AsyncQueue(name, url=url, max_body_bytes=BIG) as queue:
        await warm_up(queue)
        return await asyncio.gather(*(queue.enqueue(s.topic, s.body, id=s.id, delay=s.delay)
                                      for s in specs()))


@pytest.mark.parametrize("face", ["sync", "async", "coalesced"])
def test_a_round_keeps_its_order_within_a_partition(cluster: LocalCluster, face: str) -> None:
    name = f"o{uuid.uuid4().hex[:10]}"
    queue = sd.Queue(name, url=cluster.url, max_body_bytes=BIG)
    if face == "sync":
        results = queue.enqueue_many(specs())
    else:
        results = asyncio.run((many_async if face == "async" else coalesced)(cluster.url, name))
    assert_first_call_won(results, queue)
    queue.close()
