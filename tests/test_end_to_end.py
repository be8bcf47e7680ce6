"""A whole slice: enqueue with delays, an embedded dispatcher, a worker that runs until idle."""

from __future__ import annotations

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys

pytestmark = pytest.mark.core  # on Valkey too (tests/conftest.py)


def assert_nothing_left(client: redis.Redis, queue: str, topics: list[str]) -> None:
    """Every job acknowledged and forgotten: no record, nothing delayed, empty topic streams with
    nothing pending (docs/keys.md: an ack deletes the entry and the record, no tombstone unless
    ``keep_done``)."""
    keys = PartitionKeys(queue, 0)
    assert client.hlen(keys.jobs) == 0, client.hkeys(keys.jobs)[:5]
    assert client.zcard(keys.delayed) == 0
    assert client.zcard(keys.done) == 0
    for topic in topics:
        stream = keys.stream(topic)
        assert client.xlen(stream) == 0, client.xrange(stream, count=5)
        for group in client.xinfo_groups(stream) if client.exists(stream) else []:
            assert group["pending"] == 0, group


def test_jobs_run_once_in_due_order_and_never_early(queue: sd.Queue) -> None:
    specs = [sd.JobSpec("t", {"i": i}, delay=(40 - i) * 0.01, id=f"j{i}") for i in range(40)]
    results = queue.enqueue_many(specs)
    assert all(r.created for r in results)
    worker = sd.Worker(queue, concurrency=1)
    seen: list[tuple[str, int, int]] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        seconds, micros = queue.client.time()
        seen.append((job.id, job.due, seconds * 1000 + micros // 1000))

    worker.run(until_idle=True)
    assert sorted(job_id for job_id, _, _ in seen) == sorted(r.id for r in results)
    assert [job_id for job_id, _, _ in seen] == [f"j{i}" for i in reversed(range(40))]
    assert all(started >= due for _, due, started in seen)
    assert_nothing_left(queue.client, queue.name, ["t"])


def test_the_emptiness_check_sees_a_record_left_behind(queue: sd.Queue) -> None:
    """What the check above guards against: one record left behind (a count of keys missed it)."""
    queue.enqueue("t", {"i": 0}, id="left-behind")
    assert len(list(queue.client.scan_iter(match=f"*{queue.name}*"))) <= 5  # counting keys: blind
    with pytest.raises(AssertionError):
        assert_nothing_left(queue.client, queue.name, ["t"])


def test_failing_job_retries_then_goes_dead(queue: sd.Queue) -> None:
    queue.enqueue("t", {"fail": True}, id="bad", max_attempts=3, backoff=[0.01])
    worker = sd.Worker(queue)
    attempts: list[int] = []

    @worker.handler("t")
    def fail(job: sd.Job) -> None:
        attempts.append(job.attempt)
        raise RuntimeError("boom")

    worker.run(until_idle=True)
    assert attempts == [1, 2, 3]
    info = queue.get("bad")
    assert info is not None and info.state == "dead" and info.attempts == 3
    assert info.error is not None and info.error.startswith("RuntimeError: boom")
    assert [d.id for d in queue.dead_list()] == ["bad"]
