"""Workflows and the ends a job reaches outside a handler (docs/workflows.md#dependencies-after):
a child dead-lettered for a failed parent re-checks its parents when it is replayed (on one
partition and across partitions), and a job that goes dead because its stream entry was lost
while it was rescheduled tells its result waiters and its workflow waiters like any dead end."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from streamdelay.protocol.scripts import _assemble, lua_dir
from tests.integration.test_layout import call, promote, take
from tests.integration.test_workflows import recorder, run_worker

pytestmark = pytest.mark.timeout(120)


def dead_errors(q: sd.Queue, topic: str = "t") -> dict[str, str | None]:
    """Dead letters of ``topic``: job id -> error."""
    return {d.id: d.error for d in q.dead_list(topic)}


def test_a_replayed_child_waits_for_a_pending_parent_and_dies_again_for_a_failed_one(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="p")
        q.enqueue("t", id="c", after=["p"])
        ran, handle = recorder(frozenset({"p"}))
        run_worker(q, handle)
        assert ran == ["p"] and dead_errors(q)["c"] == "parent failed: p"
        # p is still dead: the replayed child goes back to the dead letters at once, same
        # reason, and does not count as replayed
        assert q.dead_replay("t", id="c") == 0
        again = q.get("c")
        assert again is not None and again.state == "dead", again
        assert dead_errors(q)["c"] == "parent failed: p"
        # the whole topic: p first (older), pending again, so the replayed child waits for it,
        # then runs after it
        assert q.dead_replay("t") == 2
        waiting = q.get("c")
        assert waiting is not None and waiting.state == "waiting", waiting
        assert waiting.parents == {"p": "pending"}
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == ["p", "c"]


def test_a_replayed_child_whose_parent_succeeded_since_is_due(redis_url: str, queue_name: str
                                                              ) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="ok")
        q.enqueue("t", id="p")
        q.enqueue("t", id="c", after=["ok", "p"])
        run_worker(q, recorder(frozenset({"p"}))[1])
        assert dead_errors(q)["c"] == "parent failed: p"
        assert q.dead_replay("t", id="p") == 1
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == ["p"]  # c stays dead until it is replayed itself
        assert q.dead_replay("t", id="c") == 1
        due = q.get("c")
        assert due is not None and due.state == "delayed", due
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == ["c"]


def test_a_replayed_child_rechecks_parents_of_other_partitions(redis_url: str, queue_name: str
                                                               ) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3, max_attempts=1) as q:
        child = "child"
        parents = [p for p in (f"p{i}" for i in range(30))
                   if partition_of(p, 3) != partition_of(child, 3)][:2]
        ok, bad = parents
        q.enqueue("t", id=ok)
        q.enqueue("t", id=bad)
        q.enqueue("t", id=child, after=[ok, bad])
        run_worker(q, recorder(frozenset({bad}))[1])
        assert dead_errors(q)[child] == f"parent failed: {bad}"
        assert q.dead_replay("t", id=child) == 1  # bad is still dead: dead again
        run_worker(q, recorder()[1])  # the dispatchers forward the answer
        assert q.get(child).state == "dead"  # type: ignore[union-attr]
        assert dead_errors(q)[child] == f"parent failed: {bad}"
        assert q.dead_replay("t", id=bad) == 1
        assert q.dead_replay("t", id=child) == 1
        assert q.get(child).state == "waiting"  # type: ignore[union-attr]
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == [bad, child]
        for p in range(3):
            assert q.client.xlen(PartitionKeys(queue_name, p).prefix + "outbox") == 0


def test_a_lost_entry_found_by_reschedule_ends_the_job_for_its_waiters(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=600) as q:
        q.enqueue("t", "setup", id="setup", delay=3600)
        assert q.migrate() == [1]  # layout 2: a job in its stream keeps its body only there
        keys = PartitionKeys(queue_name, 0)
        call(q.client, "registerGroup", keys, ["g", "t"])
        q.enqueue("t", {"n": 1}, id="p")
        q.enqueue("t", id="child", after=["p"], delay=3600)
        q.batch([sd.JobSpec("t", id="m")], id="b", on_complete=sd.JobSpec("t", {"cb": 1}))
        promote(q.client, keys, 2)
        assert sorted(take(q.client, keys)) == ["m", "p"]
        q.client.xtrim(keys.stream("t"), maxlen=0)  # an operator trims the stream
        assert q.reschedule("p", delay=0) is False and q.reschedule("m", delay=0) is False
        assert q.get("p").state == "dead"  # type: ignore[union-attr]
        result = q.result("p")
        assert result is not None and result.state == "dead", result
        assert result.error is not None and result.error.startswith("stream entry lost")
        assert dead_errors(q)["child"] == "parent failed: p"
        info = q.batch_info("b")
        assert info is not None and (info.dead, info.pending, info.state) == (1, 0, "done")
        assert q.get("b@2") is not None  # the on_complete callback was written


def test_the_scripts_place_ids_in_partitions_as_python_does(redis_url: str, tmp_path: Path
                                                            ) -> None:
    """flow_recheck.lua's flow_partition (CRC-32 of the placement name) against partition_of."""
    probe = tmp_path / "probe-6.lua"
    probe.write_text("-- @include flow_recheck\nlocal out = {}\n"
                     "for i = 2, #ARGV do out[i - 1] = flow_partition(ARGV[i], tonumber(ARGV[1]))"
                     " end\nreturn out\n")
    source = _assemble(probe, lua_dir() / "includes")
    ids = ["a", "child", "p17", "{tenant-9}job", "{}x", "{k", "daily@1700000000", "x@", "@5",
           "ünïcode-id", "a|b", *(f"job-{n}" for n in range(50))]
    client = redis.Redis.from_url(redis_url)
    keys = PartitionKeys("probe", 2).script_keys()
    for parts in (2, 3, 7, 16):
        got = client.eval(source, len(keys), *keys, parts, *ids)
        assert [int(g) for g in got] == [partition_of(i, parts) for i in ids], parts
