"""What the scripts store under the key layout, and Redis memory per delayed job (the pure
key and codec tests are tests/unit/test_codec_keys.py)."""

from __future__ import annotations

from datetime import datetime, timezone

import msgspec
import pytest

import streamdelay as sd
from streamdelay.protocol.codec import (
    decode_blob,
    decode_body,
    parse_record,
)
from streamdelay.protocol.keys import PartitionKeys
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(90)


def test_scripts_find_the_keys_python_names(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("order.close", {"a": 1}, id="k1", delay=60)
    present = {k.decode() for k in queue.client.scan_iter(match=f"*{queue.name}*")}
    assert {keys.delayed, keys.jobs, keys.counts, keys.meta} <= present
    assert present <= {*keys.script_keys(), keys.meta, keys.stream("order.close"),
                       keys.dead("order.close")}


def test_stored_record_matches_what_was_enqueued(queue: sd.Queue) -> None:
    at = datetime(2100, 1, 1, tzinfo=timezone.utc)
    result = queue.enqueue("t", {"x": "|"}, id="rec", at=at, ttr=5, max_attempts=3,
                           headers={"h": "v"})
    raw = queue.client.hget(PartitionKeys(queue.name, 0).jobs, "rec")
    record = parse_record(raw)
    assert (record.state, record.due, record.ttr_ms, record.max_attempts, record.topic) == (
        "d", result.due, 5000, 3, "t")
    blob = decode_blob(record.blob)
    assert (blob.fmt, decode_body(blob.fmt, blob.body), blob.headers) == (
        "j", {"x": "|"}, {"h": "v"})


def test_memory_per_delayed_job(own_redis: RedisServer) -> None:
    jobs, chunk = 100_000, 10_000
    client = own_redis.client()
    q = sd.Queue("mem", url=own_redis.url)
    q.enqueue("order.close", id="warm-up-job-0000", delay=3600)  # keys and scripts exist
    before = int(client.info("memory")["used_memory"])
    body = {"order_id": 123456789, "customer": "c-00000001", "amount_cents": 125000,
            "currency": "EUR", "note": "close unpaid"}
    assert 95 <= len(msgspec.json.encode(body)) <= 110
    for start in range(0, jobs, chunk):
        q.enqueue_many(sd.JobSpec("order.close", body, id=f"job-{i:012d}", delay=3600 + i % 997)
                       for i in range(start, start + chunk))
    after = int(client.info("memory")["used_memory"])
    assert client.zcard(PartitionKeys("mem", 0).delayed) == jobs + 1
    per_job = (after - before) / jobs
    print(f"\nRedis memory per delayed job: {per_job:.0f} B "
          f"({jobs} jobs, {len(msgspec.json.encode(body))}-byte JSON body, 16-char ids)")
    assert 100 < per_job < 600
    q.close()
    client.close()
