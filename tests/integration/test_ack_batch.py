"""``ackJobs`` settles a batch with one XACK/XDEL per topic and one HMGET/HDEL for the batch
(docs/keys.md#every-script): the outcome is the one of one call per delivery, over several
topics, with stale deliveries, a job named twice and keep_done tombstones."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(120)


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def delivered(queue: sd.Queue, topics: list[str], per_topic: int) -> list[tuple[str, str, str]]:
    """Enqueue, promote and read ``per_topic`` jobs of each topic: (topic, id, entry) each."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    call(c, "registerGroup", keys, ["g", *topics])
    for topic in topics:
        queue.enqueue_many([sd.JobSpec(topic, i, id=f"{topic}-{i}") for i in range(per_topic)])
    time.sleep(0.01)
    assert call(c, "promoteDue", keys, [1000])[0] == len(topics) * per_topic
    out = []
    for topic in topics:
        [[_, entries]] = c.xreadgroup("g", "c", {keys.stream(topic): ">"}, count=1000)
        out += [(topic, f[b"id"].decode(), eid.decode()) for eid, f in entries]
    return out


@pytest.mark.parametrize("keep_done", [0, 60_000])
def test_a_batch_over_topics_settles_each_current_delivery_once(
    queue: sd.Queue, keep_done: int
) -> None:
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["a", "b"], 5)
    queue.cancel("a-1")  # a stale delivery: acknowledged, the job left alone (it is gone)
    flat = [v for row in rows for v in row]
    twice = [*rows[0], *rows[0]]  # the same delivery twice in one batch
    assert call(c, "ackJobs", keys, ["g", keep_done, len(twice + flat) // 3, *twice, *flat, 0]) == 9
    for topic in ("a", "b"):
        assert c.xlen(keys.stream(topic)) == 0
        assert c.xpending(keys.stream(topic), "g")["pending"] == 0
    if keep_done:
        assert c.hlen(keys.jobs) == 9 and c.zcard(keys.done) == 9
        assert all(r.startswith(b"c|") for r in c.hvals(keys.jobs))
        assert queue.enqueue("a", 1, id="a-0").created is False  # the id stays taken
    else:
        assert c.hlen(keys.jobs) == 0
    assert call(c, "ackJobs", keys, ["g", keep_done, len(flat) // 3, *flat, 0]) == 0


def test_a_delivery_that_is_no_longer_current_is_acknowledged_but_kept(queue: sd.Queue) -> None:
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["a"], 2)
    topic, job, _ = rows[0]
    assert call(c, "ackJobs", keys, ["g", 0, 2, topic, job, "1-1", *rows[1], 0]) == 1
    assert c.hexists(keys.jobs, job)  # its entry is not the job's current one
    assert not c.hexists(keys.jobs, rows[1][1])


def test_an_entry_id_that_only_shares_digits_with_the_current_one_is_stale(queue: sd.Queue) -> None:
    """The current-delivery check compares the whole entry field (ackJobs reads it without a
    pattern): ids that are a prefix, a suffix or a longer form of the current one, or the same
    time without a sequence, leave the job alone, though the job's blob holds the current id."""
    c, keys = queue.client, PartitionKeys(queue.name, 0)
    rows = delivered(queue, ["a"], 1)
    topic, job, entry = rows[0]
    ms, seq = entry.split("-")
    record = c.hget(keys.jobs, job)
    assert record is not None
    # the current entry id in the body too: only the entry field may count
    c.hset(keys.jobs, job, record + f"|{entry}|".encode())
    for stale in (f"{ms}-{seq}0", f"{ms[1:]}-{seq}", f"1{ms}-{seq}", f"{ms}-{int(seq) + 1}", ms):
        assert call(c, "ackJobs", keys, ["g", 0, 1, topic, job, stale, 0]) == 0, stale
        assert c.hexists(keys.jobs, job), stale
    assert call(c, "ackJobs", keys, ["g", 0, 1, topic, job, entry, 0]) == 1
    assert not c.hexists(keys.jobs, job)
