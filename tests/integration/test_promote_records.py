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


@pytest.mark.parametrize("layout", [b"1", b"2"])
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_records_that_share_a_header_are_written_as_the_ones_that_do_not(
        queue: sd.Queue, layout: bytes, limit: int) -> None:
    """Runs of records with one header (what one enqueue call writes), cut by records that
    differ from it in one byte of the topic or the entry, that are a prefix of it, or that
    are malformed or in another state, in due order: each is promoted (or dropped, or left)
    exactly as a record alone would be."""
    queue.enqueue("setup", None, id="setup", delay=3600)
    keys = PartitionKeys(queue.name, 0)
    c: Any = queue.client
    c.hset(keys.meta, "layout", layout)
    now = int(time.time() * 1000)
    head = f"d|0|{now - 100}|{now - 500}|30000|3||a|"
    held = f"d|0|{now - 100}|{now - 500}|30000|3|1700000000000-1|a|"
    order: list[tuple[str, bytes]] = [
        ("r1", f"{head}one".encode()), ("r2", f"{head}two".encode()),
        ("r3", f"{head}{head}".encode()), ("r4", head.encode()),  # the header twice; none
        ("ab", f"d|0|{now - 100}|{now - 500}|30000|3||ab|topic ab".encode()),
        ("r5", f"{head}|pipes|".encode()),
        ("short", head[:-1].encode()),  # the header without its last '|': malformed
        ("h1", f"{held}held 1".encode()), ("h2", f"{held}held 2".encode()),
        ("h3", f"{held.replace('-1|', '-2|')}held 3".encode()),
        ("r6", f"{head}six".encode()), ("r7", f"{head}seven".encode()),
        ("ready", f"s|0|{now - 100}|{now - 500}|30000|3|1-1|a|not delayed".encode()),
        ("digit", f"d|0|{now - 100}|{now - 501}|30000|3||a|other created".encode()),
        ("r8", f"{head}eight".encode()), ("r9", f"{head}nine".encode()),
        ("letters", f"d|0|{now - 100}|{now - 500}|30000|x||a|bad".encode()),
        ("r10", f"{head}ten".encode()),
    ]
    malformed, ready = {"short", "letters"}, "ready"
    promoted = [job for job, _ in order if job not in malformed and job != ready]
    for rank, (job, raw) in enumerate(order):
        c.hset(keys.jobs, job, raw)
        c.zadd(keys.delayed, {job: rank + 1})
        if job in promoted:
            c.hincrby(keys.counts, raw.split(b"|")[7].decode(), 1)
    dropped = {}
    for _ in range(len(order)):  # a call of only a malformed record moves none: go on
        reply = run_step_sync(c, script("promoteDue").call(keys.script_keys(), [limit]))
        dropped.update({job.decode(): why.decode() for job, why in reply[3]})
    assert dropped == {job: "malformed job record" for job in malformed}
    entries = {}
    for topic in ("a", "ab"):
        for entry, fields in c.xrange(keys.stream(topic)):
            entries[fields[b"id"].decode()] = (entry, fields[b"rec"])
    assert list(entries) == [job for job in promoted if job != "ab"] + ["ab"]  # in due order
    for job, raw in order:
        if job not in promoted:
            assert c.hget(keys.jobs, job) == raw, job  # left as they were
            continue
        entry, rec = entries[job]
        assert rec == raw, job
        parts = raw.split(b"|", 8)
        header = b"|".join([b"s", *parts[1:6], entry, parts[7]]) + b"|"
        assert c.hget(keys.jobs, job) == (header if layout == b"2" else header + parts[8]), job
    counts = {k.decode(): int(v) for k, v in c.hgetall(keys.counts).items()}
    assert counts == {"a": 0, "ab": 0, "setup": 1}
    assert c.zcard(keys.delayed) == 1
