"""What ``promoteDue`` writes, byte for byte, on its plain path (docs/keys.md#layouts): the
record in state s is the delayed record with its state and entry replaced (layout 1: the whole
record, what an older process reads; layout 2: the header up to its 8th ``|``), the stream
entry carries the record as it was, and the counts hash loses one per promoted job of each
topic, whatever the order of the topics in the batch. Records that are not plain delayed ones
(malformed, another state, none) are never promoted."""

from __future__ import annotations

import time
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script

pytestmark = pytest.mark.timeout(60)

TOPICS = ["a", "b", "a", "a", "b", "c", "a"]  # runs of one topic, broken and taken up again


def promote_all(client: Any, keys: PartitionKeys, limit: int) -> list[Any]:
    """``promoteDue`` until it moves nothing; every call's dropped pairs."""
    dropped: list[Any] = []
    while True:
        reply = run_step_sync(client, script("promoteDue").call(keys.script_keys(), [limit]))
        dropped += reply[3]
        if not reply[0]:
            return dropped


def delayed(client: Any, keys: PartitionKeys, records: dict[str, bytes]) -> None:
    """Write ``records`` as due jobs (due 1 ms after the epoch), counted per topic."""
    for job, raw in records.items():
        client.hset(keys.jobs, job, raw)
        client.zadd(keys.delayed, {job: 1})
        if raw.startswith(b"d|") and raw.count(b"|") >= 8:
            client.hincrby(keys.counts, raw.split(b"|")[7].decode(), 1)


@pytest.mark.parametrize("layout", [b"1", b"2"])
def test_the_new_record_is_the_delayed_one_with_its_state_and_entry_replaced(
        queue: sd.Queue, layout: bytes) -> None:
    queue.enqueue("setup", None, id="setup", delay=3600)  # creates the queue's meta
    keys = PartitionKeys(queue.name, 0)
    c: Any = queue.client
    c.hset(keys.meta, "layout", layout)
    now = int(time.time() * 1000)
    records = {f"j{i}": f"d|{i % 3}|{now - 100 + i}|{now - 500}|30000|{3 + i}||{topic}|"
                        f"{{\"n\": {i}, \"pipes\": \"|x|y|\"}}".encode()
               for i, topic in enumerate(TOPICS)}
    records["old-entry"] = f"d|2|{now}|{now - 9}|5|3|1700000000000-7|b|body".encode()
    records["empty-blob"] = f"d|0|{now}|{now}|5|3||a|".encode()
    delayed(c, keys, records)
    assert promote_all(c, keys, 3) == []  # batches of 3: runs cut by the batch too
    entries = {}
    for topic in "abc":
        for entry, fields in c.xrange(keys.stream(topic)):
            entries[fields[b"id"].decode()] = (entry, fields[b"rec"], topic)
    assert sorted(entries) == sorted(records)
    for job, raw in records.items():
        entry, rec, topic = entries[job]
        assert rec == raw  # the stream entry carries the record as it was when delayed
        parts = raw.split(b"|", 8)
        header = b"|".join([b"s", *parts[1:6], entry, parts[7]]) + b"|"
        assert c.hget(keys.jobs, job) == (header if layout == b"2" else header + parts[8]), job
        assert topic == parts[7].decode()
    counts = {k.decode(): int(v) for k, v in c.hgetall(keys.counts).items()}
    assert counts == {"a": 0, "b": 0, "c": 0, "setup": 1}
    assert c.zcard(keys.delayed) == 1  # only the setup job, an hour ahead


def test_records_that_are_not_plain_delayed_ones_are_never_promoted(queue: sd.Queue) -> None:
    queue.enqueue("setup", None, id="setup", delay=3600)
    keys = PartitionKeys(queue.name, 0)
    c: Any = queue.client
    good = b"d|0|1|1|5|3||t|ok"
    bad = {"letters": b"d|0|x|1|5|3||t|b", "five-numbers": b"d|0|1|1|5||t|b",
           "no-topic": b"d|0|1|1|5|3|||b", "sign": b"d|0|+1|1|5|3||t|b",
           "entry-letters": b"d|0|1|1|5|3|abc|t|b",
           "unicode-digit": "d|0|\u0661|1|5|3||t|b".encode()}
    other_state = {"ready": b"s|0|1|1|5|3|1-1|t|b", "dead": b"x|0|1|1|5|3|1-1|t|b"}
    delayed(c, keys, {"good": good, **bad, **other_state})
    c.zadd(keys.delayed, {"no-record": 1})
    dropped = {job.decode(): why.decode() for job, why in promote_all(c, keys, 100)}
    assert dropped == {**{job: "malformed job record" for job in bad}, "no-record": "no job record"}
    assert [f[b"id"] for _, f in c.xrange(keys.stream("t"))] == [b"good"]
    for job, raw in {**bad, **other_state}.items():
        assert c.hget(keys.jobs, job) == raw, job  # left as they were, for get and cancel
    assert c.zcard(keys.delayed) == 1
