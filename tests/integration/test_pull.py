"""The pull API (docs/pull.md): ``reserve`` then ``ack`` / ``fail`` / ``touch`` by receipt, on a
real redis-server, with the rules of a worker (ttr, reclaim, attempts, backoff, dead letters,
pause) and ``StaleReceipt`` for a delivery that is no longer current."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.support.promoting import promote_due
from tests.support.redis_server import RedisServer
from tests.system import test_docs_examples as docs_examples
from tests.system.test_acl_tls import documented_acl_line

pytestmark = pytest.mark.timeout(60)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example


def promote(q: sd.Queue, expected: int = 1, partition: int = 0) -> None:
    """Move ``expected`` due jobs into their streams (a dispatcher's promote, no loop)."""
    async def run() -> None:
        dispatcher = sd.Dispatcher(q.config)
        try:
            await promote_due(dispatcher, PartitionKeys(q.name, partition), expected)
        finally:
            await dispatcher.close()

    asyncio.run(run())


@contextlib.contextmanager
def running_dispatcher(q: sd.Queue) -> Iterator[None]:
    """A dispatcher running in a thread for ``q`` (as ``streamdelay dispatch`` would)."""
    loop = asyncio.new_event_loop()
    dispatcher = sd.Dispatcher(q.config)
    thread = threading.Thread(target=loop.run_until_complete, args=(dispatcher.run(),),
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(dispatcher.stop)
        thread.join(10)
        loop.run_until_complete(dispatcher.close())
        loop.close()


@pytest.fixture
def dispatching(queue: sd.Queue) -> Iterator[None]:
    """A dispatcher running for the test's queue."""
    with running_dispatcher(queue):
        yield


def test_reserve_then_ack(queue: sd.Queue) -> None:
    queue.enqueue("mail", {"to": "a@b"}, id="m1", ttr=30, headers={"k": "v"})
    promote(queue)
    [r] = queue.reserve("mail", consumer="c1")
    assert (r.id, r.topic, r.body, r.headers, r.attempt, r.ttr) == (
        "m1", "mail", {"to": "a@b"}, {"k": "v"}, 1, 30.0)
    assert r.due > 0 and isinstance(r.receipt, str)
    info = queue.get("m1")
    assert info is not None and info.state == "reserved" and info.consumer == "c1"
    assert queue.reserve("mail", consumer="c2") == []
    r.ack()
    assert queue.get("m1") is None
    with pytest.raises(sd.StaleReceipt) as err:
        r.ack()  # already settled
    assert err.value.field == "receipt"


def test_count_and_default_consumer(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(5)])
    promote(queue, 5)
    got = queue.reserve("t", count=3)
    assert [r.body for r in got] == [0, 1, 2]
    info = queue.get("j0")
    assert info is not None and info.consumer and info.consumer.count("-") >= 2  # host-pid-rand
    assert len(queue.reserve("t", count=100)) == 2
    for r in got:
        r.ack()


def test_release_hands_back_with_no_attempt_spent(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", i, id=f"r{i}", max_attempts=1) for i in range(3)])
    promote(queue, 3)
    got = queue.reserve("t", count=3, consumer="c1")
    assert queue.release(got[:2]) == 2
    assert got[2].release() is True
    for job_id in ("r0", "r1", "r2"):  # max_attempts=1: a spent attempt would make it dead
        info = queue.get(job_id)
        assert info is not None and (info.state, info.attempts) == ("ready", 0), info
    again = queue.reserve("t", count=3, consumer="c2")
    assert sorted(r.id for r in again) == ["r0", "r1", "r2"]
    assert {r.attempt for r in again} == {1}
    assert got[0].release() is False  # no longer current: nothing changes
    with pytest.raises(sd.StaleReceipt):
        got[0].ack()
    for reservation in again:
        reservation.ack()

    queue.enqueue("t", "x", id="ra")
    promote(queue)

    async def run() -> None:  # the async face
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as q:
            [taken] = await q.reserve("t")
            assert await taken.release() is True
            [again] = await q.reserve("t")
            assert (again.id, again.attempt) == ("ra", 1)
            assert await q.release([taken]) == 0
            await again.ack()

    asyncio.run(run())


def test_fail_retries_with_backoff_then_dead(queue: sd.Queue) -> None:
    queue.enqueue("t", "x", id="f", max_attempts=3, backoff=[0.3, 0.3])
    promote(queue)
    for attempt in (1, 2):
        [r] = queue.reserve("t", consumer="c")
        assert r.attempt == attempt
        before = queue.get("f")
        assert r.fail(f"boom {attempt}") == "retried"
        info = queue.get("f")
        assert info is not None and before is not None and info.state == "delayed"
        assert info.due - before.due >= 300  # the job's own backoff, not immediate
        assert queue.reserve("t", consumer="c") == []  # not before its due time
        time.sleep(0.3)
        promote(queue)
    [r] = queue.reserve("t", consumer="c")
    assert r.attempt == 3
    assert r.fail("boom 3") == "dead"
    info = queue.get("f")
    assert info is not None and info.state == "dead"
    [dead] = queue.dead_list("t")
    assert (dead.id, dead.attempts, dead.error) == ("f", 3, "boom 3")


def test_fail_explicit_delay_and_dead_now(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", 1, id="a"), sd.JobSpec("t", 2, id="b")])
    promote(queue, 2)
    a, b = queue.reserve("t", count=2)
    before = queue.get("a")
    assert a.fail("later", retry_delay=60) == "retried"
    info = queue.get("a")
    assert info is not None and before is not None and info.due - before.due >= 60_000
    assert b.fail("poison", dead=True) == "dead"
    [dead] = queue.dead_list("t")
    assert (dead.id, dead.attempts) == ("b", 1)
    with pytest.raises(sd.StaleReceipt):
        a.fail("again")


def test_touch_keeps_a_slow_consumers_job(queue: sd.Queue) -> None:
    queue.enqueue("slow", "x", id="s", ttr=1)
    promote(queue)
    [r] = queue.reserve("slow", consumer="slowpoke")
    other = sd.Queue(queue.name, url=queue.config.url)
    try:
        for _ in range(5):  # 2.5 s: well past the 1 s ttr, touched every 0.5 s
            time.sleep(0.5)
            r.touch()
            assert other.reserve("slow", consumer="eager") == []  # it reclaims first
        r.ack()
        assert queue.get("s") is None
    finally:
        other.close()


def test_ttr_expiry_redelivers_and_the_first_ack_is_stale(queue: sd.Queue) -> None:
    queue.enqueue("t", "x", id="e", ttr=1)
    promote(queue)
    [first] = queue.reserve("t", consumer="frozen")
    time.sleep(1.1)
    [second] = queue.reserve("t", consumer="alive", wait=2)  # reclaimed by reserve itself
    assert (second.id, second.attempt) == ("e", 2)
    for settle in (first.ack, first.touch, lambda: first.fail("late")):
        with pytest.raises(sd.StaleReceipt):
            settle()
    second.ack()
    assert queue.get("e") is None


def test_cancel_or_replace_while_reserved_is_stale(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", 1, id="c"), sd.JobSpec("t", 2, id="r")])
    promote(queue, 2)
    c, r = queue.reserve("t", count=2)
    assert queue.cancel("c")
    queue.enqueue("t", 3, id="r", replace=True, delay=60)
    for reservation in (c, r):
        with pytest.raises(sd.StaleReceipt):
            reservation.touch()
        with pytest.raises(sd.StaleReceipt):
            reservation.ack()
    info = queue.get("r")
    assert info is not None and info.state == "delayed" and info.body == 3


def test_receipt_rebuilds_in_another_process(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", 1, id="p1"), sd.JobSpec("t", 2, id="p2")])
    promote(queue, 2)
    one, two = queue.reserve("t", count=2, consumer="http-1")
    code = (
        "import sys, streamdelay as sd\n"
        "q = sd.Queue(sys.argv[1], url=sys.argv[2])\n"
        "r = q.reservation(sys.argv[3])\n"
        "print(r.id, r.topic, r.attempt, r.body)\n"
        "r.touch()\n"
        "print(r.fail('from afar', retry_delay=30) if sys.argv[4] == 'fail' else r.ack())\n"
    )
    for reservation, how in ((one, "ack"), (two, "fail")):
        out = subprocess.run([sys.executable, "-c", code, queue.name, queue.config.url,
                              reservation.receipt, how], capture_output=True, text=True,
                             check=True, timeout=30).stdout.split("\n")
        assert out[0] == f"{reservation.id} t 1 None"
        assert out[1] == ("None" if how == "ack" else "retried")
    assert queue.get("p1") is None
    info = queue.get("p2")
    assert info is not None and info.state == "delayed" and info.attempts == 1
    with pytest.raises(sd.StaleReceipt):
        one.ack()


@pytest.mark.parametrize("bad", ["", "not a receipt", "AAAA", 42, "x" * 5000])
def test_bad_receipt_names_the_field(queue: sd.Queue, bad: Any) -> None:
    with pytest.raises(sd.ValidationError) as err:
        queue.reservation(bad)
    assert err.value.field == "receipt"


def test_receipt_of_another_queue_is_refused(queue: sd.Queue, redis_url: str) -> None:
    queue.enqueue("t", 1, id="x")
    promote(queue)
    [r] = queue.reserve("t")
    with sd.Queue(queue.name + "b", url=redis_url) as other, pytest.raises(
            sd.ValidationError) as err:
        other.reservation(r.receipt)
    assert err.value.field == "receipt"
    r.ack()


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"wait": 31}, "wait"), ({"wait": -1}, "wait"), ({"count": 0}, "count"),
    ({"count": 101}, "count"), ({"group": "no spaces"}, "group"),
    ({"consumer": "no spaces"}, "consumer"),
])
def test_bad_reserve_arguments(queue: sd.Queue, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(sd.ValidationError) as err:
        queue.reserve("t", **kwargs)
    assert err.value.field == field


def test_wait_blocks_then_returns_nothing(queue: sd.Queue) -> None:
    queue.enqueue("other", 1)  # the queue exists; nothing for "t"
    began = time.monotonic()
    assert queue.reserve("t", wait=1.5) == []
    assert time.monotonic() - began >= 1.4


def test_wait_returns_the_job_when_it_becomes_due(queue: sd.Queue, dispatching: None) -> None:
    queue.enqueue("t", "soon", id="soon", delay=0.8)
    began = time.monotonic()
    [r] = queue.reserve("t", wait=10)
    assert r.id == "soon" and 0.7 <= time.monotonic() - began < 9
    r.ack()


def test_a_paused_topic_delivers_nothing(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="p")
    promote(queue)
    assert queue.pause("t")
    assert queue.reserve("t") == []
    assert queue.reserve("t", wait=0.6) == []
    assert queue.resume("t")
    [r] = queue.reserve("t")
    assert r.id == "p"
    r.ack()


def test_a_topic_served_by_another_group_is_refused(queue: sd.Queue) -> None:
    queue.enqueue("t", 1)
    promote(queue)
    [r] = queue.reserve("t", group="billing")
    with pytest.raises(sd.ConfigError):
        queue.reserve("t", group="other")
    r.ack()


def test_async_reserve(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", i, id=f"a{i}", max_attempts=2, backoff=[0])
                        for i in range(3)])
    promote(queue, 3)

    async def run() -> list[str]:
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as q:
            got = await q.reserve("t", count=3, consumer="async-1")
            assert all(isinstance(r, sd.AsyncReservation) for r in got)
            await got[0].ack()
            await got[1].touch()
            assert await got[1].fail("no") == "retried"
            assert await got[2].fail("no", dead=True) == "dead"
            rebuilt = q.reservation(got[0].receipt)
            with pytest.raises(sd.StaleReceipt):
                await rebuilt.ack()
            assert await q.reserve("t", wait=0.2) == []  # a1 is not due before the promote
            return [r.id for r in got]

    assert asyncio.run(run()) == ["a0", "a1", "a2"]
    promote(queue)
    info = queue.get("a1")
    assert info is not None and info.attempts == 1


def test_reserve_reads_every_partition(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        q.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(12)])
        per_partition = Counter(partition_of(f"j{i}", 3) for i in range(12))
        for partition, expected in per_partition.items():
            promote(q, expected, partition)
        first = q.reserve("t", count=5, consumer="c")
        rest = q.reserve("t", count=100, consumer="c")
        assert len(first) == 5 and len(rest) == 7
        assert sorted(r.body for r in first + rest) == list(range(12))
        for r in first + rest:
            r.ack()
        assert q.reserve("t") == []


def test_wait_over_partitions_wakes_for_any(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        ids = {partition_of(f"w{i}", 3): f"w{i}" for i in range(30)}
        with running_dispatcher(q):
            for partition in (2, 1):
                q.enqueue("t", partition, id=ids[partition], delay=0.5)
                began = time.monotonic()
                [r] = q.reserve("t", wait=10)
                assert r.body == partition and 0.4 <= time.monotonic() - began < 9
                r.ack()


def test_a_pause_reaches_a_waiting_reserve(queue: sd.Queue) -> None:
    queue.enqueue("other", 1)  # the queue exists
    got: list[list[sd.Reservation]] = []
    waiting = threading.Thread(target=lambda: got.append(queue.reserve("t", wait=2.5)))
    waiting.start()
    time.sleep(0.3)  # blocked in its read now
    assert queue.pause("t")
    queue.enqueue("t", 1, id="p")
    promote(queue)
    waiting.join(10)
    assert got == [[]]
    info = queue.get("p")
    assert info is not None and info.state == "ready" and info.attempts == 0  # handed back
    queue.resume("t")
    [r] = queue.reserve("t", wait=timedelta(seconds=1))
    assert (r.id, r.attempt) == ("p", 1)
    r.ack()


def test_entries_that_can_never_run_go_dead(queue: sd.Queue, redis_url: str,
                                            caplog: pytest.LogCaptureFixture) -> None:
    queue.enqueue("t", "x" * 200, id="big")
    queue.enqueue("t", "fine", id="ok")
    promote(queue, 2)
    stream = PartitionKeys(queue.name, 0).stream("t")
    queue.client.xadd(stream, {"id": "ghost", "rec": "garbage"})  # a foreign writer's mistake
    with sd.Queue(queue.name, url=redis_url, max_body_bytes=100) as small:
        [r] = small.reserve("t", count=10)
    assert r.id == "ok"
    r.ack()
    big = queue.get("big")
    assert big is not None and big.state == "dead" and "over the limit" in (big.error or "")
    assert queue.client.xlen(stream) == 0  # the ghost entry is gone too
    assert any("job big is dead" in m for m in caplog.messages)


def test_the_documented_acl_user_can_pull(own_redis: RedisServer) -> None:
    admin = own_redis.client()
    admin.execute_command(*documented_acl_line("pulls", "pw-pull"))
    admin.acl_log_reset()
    url = f"redis://sd-pulls:pw-pull@127.0.0.1:{own_redis.port}/0"
    with sd.Queue("pulls", url=url, retry_for=1.0) as q:
        q.enqueue_many([sd.JobSpec("t", i, id=f"a{i}", ttr=1) for i in range(3)])
        promote(q, 3)
        a, b, c = q.reserve("t", count=3, consumer="one", wait=1)
        a.touch()
        a.ack()
        assert b.fail("no", dead=True) == "dead"
        time.sleep(1.05)
        state = q._pull_state
        assert state is not None
        state.core.cadence.due_now(state.core.site)  # the reclaim and prune passes run now
        [again] = q.reserve("t", consumer="two", wait=1)  # c, reclaimed
        assert (again.id, again.attempt) == (c.id, 2)
        again.ack()
        assert q.reserve("t", wait=0.2) == []
        assert q.pause("t") and q.reserve("t") == []
    denied = [(e.get("reason"), e.get("object")) for e in admin.acl_log()]
    assert denied == [], f"the documented ACL is missing {denied}"


def test_pull_examples_run(example_env: dict[str, str]) -> None:
    out = run_example("pull_consumer.py", example_env).splitlines()
    assert out == [
        "bad: attempt 1 failed, retried",
        "bad: attempt 2 failed, dead",
        "nov: attempt 1 built",
        "oct: attempt 1 built",
        "dead: ['bad']",
        "dec acknowledged by its receipt: True",
        "a second ack: StaleReceipt",
    ]
    assert run_example("pull_async.py", example_env).splitlines() == [
        "10 thumbnails, each once: True"]


def test_a_deleted_stream_or_group_is_created_again(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="x")
    promote(queue)
    [r] = queue.reserve("t", consumer="c")
    r.ack()
    stream = PartitionKeys(queue.name, 0).stream("t")
    queue.client.xgroup_destroy(stream, "workers")  # the read finds no group
    assert queue.reserve("t") == []
    queue.client.delete(stream)  # the reclaim pass finds no stream
    state = queue._pull_state
    assert state is not None
    state.core.cadence.due_now(state.core.site)
    assert queue.reserve("t") == []
    queue.enqueue("t", 2, id="y")
    promote(queue)
    [r] = queue.reserve("t", wait=1)
    assert r.id == "y"
    r.ack()


def test_a_receipt_from_a_queue_with_other_partitions_is_refused(redis_url: str,
                                                                 queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=4) as wide:
        wide.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(12)])
        for partition, expected in Counter(partition_of(f"j{i}", 4) for i in range(12)).items():
            promote(wide, expected, partition)
        taken = wide.reserve("t", count=12)
        far = max(taken, key=lambda r: partition_of(r.id, 4))
        assert partition_of(far.id, 4) > 0
        narrow = sd.Queue(queue_name, url=redis_url, partitions=1)
        with pytest.raises(sd.ValidationError) as err:
            narrow.reservation(far.receipt)
        assert err.value.field == "receipt"
        narrow.close()
        for r in taken:
            wide.reservation(r.receipt).ack()


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"error": 42}, "error"), ({"error": "x", "dead": "yes"}, "dead"),
    ({"error": "x", "retry_delay": -1}, "retry_delay"),
    ({"error": "x", "retry_delay": "soon"}, "retry_delay"),
])
def test_bad_fail_arguments_change_nothing(queue: sd.Queue, kwargs: dict[str, Any],
                                           field: str) -> None:
    queue.enqueue("t", 1, id="v")
    promote(queue)
    [r] = queue.reserve("t")
    with pytest.raises(sd.ValidationError) as err:
        r.fail(**kwargs)
    assert err.value.field == field
    info = queue.get("v")
    assert info is not None and info.state == "reserved" and info.attempts == 0
    r.ack()
