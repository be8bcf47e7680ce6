"""A Worker's reclaim counts only the silence it witnessed and never takes its own running
deliveries (docs/guarantees.md#never-twice-at-once; lua/requeueStuck-6.lua ARGV 7-11,
consume/core/upkeep_plans.py ``Witness``), checked on a real redis-server restarted from its AOF.

What Redis 7.0 does that makes the rule necessary: a pending entry's idle time survives a
restart from the AOF (its delivery time is kept as an absolute time), so the outage counts as
the consumer's silence unless the reclaimer discounts it.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.consume.core.upkeep_plans import Reclaimed, Witness, reclaim_plan
from streamdelay.io.runner import drive_sync
from streamdelay.protocol.keys import PartitionKeys
from tests.integration.test_pull import promote
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(60)
GAP_MS = 1700  # a Worker's with reclaim_interval=1 (consume/upkeep_loops.py Liveness)


def _pending(q: sd.Queue) -> dict[str, tuple[str, int]]:
    """Entry id -> (owner, idle ms) of topic t's pending list."""
    rows: Any = q.client.xpending_range(PartitionKeys(q.name, 0).stream("t"), "workers", "-",
                                        "+", 10)
    return {row["message_id"].decode(): (row["consumer"].decode(),
                                         int(row["time_since_delivered"])) for row in rows}


def _reclaim(q: sd.Queue, witness: Witness) -> Reclaimed:
    return drive_sync(q.client, reclaim_plan(q.name, 1, "workers", ["t"], witness=witness),
                      None)


def test_a_reclaim_counts_no_outage_and_takes_no_run_of_its_own(durable_redis: RedisServer
                                                                 ) -> None:
    q = sd.Queue("witness", url=durable_redis.url)
    q.enqueue("t", id="a", ttr=1)
    q.enqueue("t", id="b", ttr=1)
    promote(q, 2)
    # two jobs due in the same millisecond are promoted in id order, else in enqueue order:
    # whichever c takes is "theirs"
    theirs = [r.id for r in q.reserve("t", consumer="c")]
    assert len(theirs) == 1
    assert len(q.reserve("t", consumer="me")) == 1
    pending = _pending(q)
    mine = next(eid for eid, (owner, _) in pending.items() if owner == "me")
    witness = Witness("me", GAP_MS, running={(0, "t"): [mine]})

    time.sleep(1.2)  # both silent past their ttr of 1 s
    assert _reclaim(q, witness).count() == 0  # its first call: contact starts now
    assert witness.since_ms == {0: witness.last_ms[0]}

    q.close()
    durable_redis.kill()
    time.sleep(2.0)
    durable_redis.start()
    q = sd.Queue("witness", url=durable_redis.url)
    # the AOF kept the delivery times: the idle times now hold the 2 s outage
    assert all(idle >= 3000 for _, idle in _pending(q).values()), _pending(q)
    before = dict(witness.since_ms)
    assert _reclaim(q, witness).count() == 0  # more than GAP_MS since its last call: anew
    assert witness.since_ms[0] > before[0] + 2000

    deadline = time.monotonic() + 10
    found = Reclaimed()
    while not found.count() and time.monotonic() < deadline:
        time.sleep(0.2)
        found = _reclaim(q, witness)
    # once it witnessed a ttr of silence: c's delivery, never the one its own consumer runs
    assert found.moved_ids == theirs, found
    owners = {owner for owner, _ in _pending(q).values()}
    assert owners == {"me"}
    waited = witness.last_ms[0] - witness.since_ms[0]
    assert waited >= 1000, waited
    q.close()


def test_without_a_witness_the_reclaim_is_as_before(durable_redis: RedisServer) -> None:
    with sd.Queue("plain", url=durable_redis.url) as q:
        q.enqueue("t", id="j", ttr=1)
        promote(q)
        assert [r.id for r in q.reserve("t", consumer="c")] == ["j"]
        time.sleep(1.1)
        found = drive_sync(q.client, reclaim_plan(q.name, 1, "workers", ["t"]), None)
        assert found.moved_ids == ["j"]
