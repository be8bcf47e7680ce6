"""Execution control on a real redis-server through ``q.reserve`` (docs/worker.md#abort,
#checkpoints, #snooze): the abort flag of ``cancelJob`` (its record for the workers, the
touch's ``Aborted``, the result and event), checkpoints carried by ``touchJobs`` and
``failJob`` into the next delivery and gone when the job ends, and a snooze that spends no
attempt. Bad input names its field."""

from __future__ import annotations

import asyncio

import pytest
import redis

import streamdelay as sd
from streamdelay.consume.core.control_plans import aborts_key, checkpoints_key
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.integration.test_pull import promote

pytestmark = pytest.mark.timeout(60)


def _keys(q: sd.Queue, job_id: str) -> PartitionKeys:
    return PartitionKeys(q.name, partition_of(job_id, q.config.partitions))


def _raw(q: sd.Queue) -> redis.Redis:
    return redis.Redis.from_url(q.config.url)


def test_abort_a_reserved_job(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True, keep_result=60) as q:
        q.enqueue("t", {"n": 1}, id="a1")
        promote(q)
        [r] = q.reserve("t", consumer="c1")
        assert q.cancel("a1", abort=True) is True
        assert q.get("a1") is None
        assert q.cancel("a1", abort=True) is False  # retry-safe: nothing left to do
        with pytest.raises(sd.Aborted) as err:
            r.touch()
        assert err.value.field == "receipt" and "aborted" in str(err.value)
        with pytest.raises(sd.Aborted):
            r.fail("boom")  # not retried: the job is gone
        with pytest.raises(sd.StaleReceipt):
            r.ack()  # an ack of a cancelled job changes nothing
        result = q.result("a1")
        assert result is not None and (result.state, result.error) == ("cancelled", "aborted")
        events = [e for e in q.events(follow=False) if e.kind == "cancelled" and e.id == "a1"]
        assert [e.detail for e in events] == ["aborted"]
        raw = _raw(q)
        key = aborts_key(_keys(q, "a1"))
        members = raw.zrange(key, 0, -1)
        assert members == [f"t|{r._receipt.entry}".encode()]
        assert 0 < raw.pttl(key) <= 60_000  # bounded: gone a minute after the last abort


def test_abort_of_a_job_not_running_is_a_plain_cancel(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=60) as q:
        q.enqueue("t", 1, id="d1", delay=60)
        assert q.cancel("d1", abort=True) is True
        result = q.result("d1")
        assert result is not None and (result.state, result.error) == ("cancelled", "cancelled")
        assert not _raw(q).exists(aborts_key(_keys(q, "d1")))
        # and a plain cancel of a reserved job: no abort recorded, the touch says stale
        q.enqueue("t", 2, id="p1")
        promote(q)
        [r] = q.reserve("t")
        assert q.cancel("p1") is True
        with pytest.raises(sd.StaleReceipt) as err:
            r.touch()
        assert not isinstance(err.value, sd.Aborted)


def test_checkpoint_reaches_the_next_attempt_and_goes_when_the_job_ends(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", "x", id="c1", backoff=[0])
        promote(q)
        [r] = q.reserve("t", consumer="c1")
        assert r.last_checkpoint is None
        r.touch(checkpoint={"page": 3})
        r.touch(progress=0.5, checkpoint={"page": 4})  # the latest one counts
        assert r.fail("boom", retry_delay=0) == "retried"
        promote(q)
        [again] = q.reserve("t", consumer="c2")
        assert (again.attempt, again.last_checkpoint) == (2, {"page": 4})
        # a failure may carry a newer one, and a hand-back keeps it too
        assert again.fail("boom", retry_delay=0, checkpoint={"page": 7}) == "retried"
        promote(q)
        [third] = q.reserve("t")
        assert third.last_checkpoint == {"page": 7}
        third.touch(checkpoint=[1, 2])
        assert third.release() is True
        [fourth] = q.reserve("t")
        assert (fourth.attempt, fourth.last_checkpoint) == (3, [1, 2])
        key = checkpoints_key(_keys(q, "c1"))
        assert _raw(q).hexists(key, "c1")
        fourth.ack()
        assert not _raw(q).hexists(key, "c1")  # gone with the job


def test_checkpoint_goes_with_dead_and_cancel(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue_many([sd.JobSpec("t", 1, id="k1", max_attempts=1),
                        sd.JobSpec("t", 2, id="k2")])
        promote(q, 2)
        taken = {r.id: r for r in q.reserve("t", count=2)}
        for r in taken.values():
            r.touch(checkpoint={"id": r.id})
        raw = _raw(q)
        assert raw.hexists(checkpoints_key(_keys(q, "k1")), "k1")
        assert taken["k1"].fail("last") == "dead"
        assert not raw.hexists(checkpoints_key(_keys(q, "k1")), "k1")
        assert q.cancel("k2") is True
        assert not raw.hexists(checkpoints_key(_keys(q, "k2")), "k2")


def test_snooze_spends_no_attempt(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", "x", id="s1", max_attempts=1)
        promote(q)
        for n in range(3):  # max_attempts=1: a spent attempt would make it dead
            [r] = q.reserve("t")
            assert r.attempt == 1
            before = q.get("s1")
            assert r.fail("", snooze=0.2, checkpoint={"n": n}) == "snoozed"
            info = q.get("s1")
            assert info is not None and before is not None
            assert (info.state, info.attempts) == ("delayed", 0)
            assert info.due - before.due >= 200
            promote(q)
        [r] = q.reserve("t")
        assert r.last_checkpoint == {"n": 2}
        r.ack()

        async def run() -> None:  # the async face
            async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
                await aq.enqueue("t", "y", id="s2")
                await asyncio.to_thread(promote, q)
                [taken] = await aq.reserve("t")
                await taken.touch(checkpoint="half")
                assert await taken.fail("", snooze=0) == "snoozed"
                await asyncio.to_thread(promote, q)
                [again] = await aq.reserve("t")
                assert (again.attempt, again.last_checkpoint) == (1, "half")
                assert await aq.cancel("s2", abort=True) is True
                with pytest.raises(sd.Aborted):
                    await again.touch()

        asyncio.run(run())


def test_bad_input_names_the_field(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", "x", id="b1")
        promote(q)
        [r] = q.reserve("t")
        with pytest.raises(sd.ValidationError) as err:
            r.touch(checkpoint=object())
        assert err.value.field == "checkpoint" and "encoded" in str(err.value)
        with pytest.raises(sd.ValidationError) as err:
            r.touch(checkpoint="x" * (64 * 1024))
        assert err.value.field == "checkpoint" and "64 KiB" in str(err.value)
        with pytest.raises(sd.ValidationError) as err:
            r.touch(checkpoint=float("nan"))
        assert err.value.field == "checkpoint"
        with pytest.raises(sd.ValidationError) as err:
            r.fail("", snooze=-1)
        assert err.value.field == "snooze"
        with pytest.raises(sd.ValidationError) as err:
            r.fail("", snooze=1, retry_delay=1)
        assert err.value.field == "snooze"
        with pytest.raises(sd.ValidationError) as err:
            sd.Snooze(-1)
        assert err.value.field == "delay"
        r.touch(checkpoint="x" * (64 * 1024 - 2))  # exactly 64 KiB of JSON: accepted
        r.ack()


def test_a_foreign_value_at_the_checkpoints_key_breaks_nothing(redis_url: str,
                                                               queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        _raw(q).set(checkpoints_key(_keys(q, "f1")), "not a hash")
        q.enqueue("t", 1, id="f1")
        promote(q)
        [r] = q.reserve("t")
        r.touch(checkpoint={"n": 1})  # not kept, but the heartbeat holds
        assert r.release() is True  # the re-queue ignores it
        [again] = q.reserve("t")
        assert again.last_checkpoint is None
        assert again.fail("x", retry_delay=0, checkpoint=2) == "retried"
        promote(q)
        [third] = q.reserve("t")
        third.ack()
        assert q.get("f1") is None


def test_a_checkpoint_rides_through_a_staged_topic(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("st", 1, id="p1", priority=9, key="tenant-a")
        promote(q)
        [r] = q.reserve("st")
        assert r.priority == "9"
        r.touch(checkpoint={"done": 10})
        assert r.fail("x", retry_delay=0) == "retried"
        promote(q)
        [again] = q.reserve("st")
        assert (again.attempt, again.last_checkpoint) == (2, {"done": 10})
        again.ack()


def test_the_dashboards_cancel_aborts_a_running_job(redis_url: str, queue_name: str) -> None:
    from streamdelay.web.dashboard.actions import confirm_text, perform

    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", 1, id="d1")
        promote(q)
        [r] = q.reserve("t")

        async def run() -> str:
            async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
                return await perform(aq, "cancel", "d1", None)

        assert asyncio.run(run()) == "job d1 cancelled"
        assert "aborted" in confirm_text("cancel", queue_name, "d1", None)
        with pytest.raises(sd.Aborted):
            r.touch()
