"""``keep_done`` per job (docs/producer.md#keep_done): a job's own value decides whether its
acknowledgement leaves a ``done`` tombstone and for how long, over the queue's, for a Worker
(its acks batched apart from the plain ones), a pull reservation (the value rides in the signed
receipt) and a job enqueued over the HTTP API; plain jobs settle as before. Bad values name the
field."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

import streamdelay as sd
from streamdelay.consume.core.receipts import Receipt, is_genuine, signed
from streamdelay.protocol.keys import PartitionKeys
from tests.integration.test_pull import promote

pytestmark = pytest.mark.timeout(90)


def state(q: sd.Queue, job_id: str) -> str | None:
    """The job's state, None when the queue forgot it."""
    info = q.get(job_id)
    return None if info is None else info.state


def server_ms(q: sd.Queue) -> int:
    """The Redis server clock, epoch ms."""
    seconds, micros = q.client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def run_all(q: sd.Queue) -> list[str]:
    """Run every job of topic t with a Worker of ``q`` until idle; the ids it ran."""
    ran: list[str] = []
    worker = sd.Worker(q, concurrency=4)
    worker.handler("t")(lambda job: ran.append(job.id))
    worker.run(until_idle=True)
    return ran


def test_a_jobs_keep_done_wins_over_its_worker_queues(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:  # the queue keeps no tombstones
        kept = [q.enqueue("t", {"i": i}, id=f"kept-{i}", keep_done=3600).id for i in range(3)]
        plain = [q.enqueue("t", {"i": i}, id=f"plain-{i}").id for i in range(3)]
        q.enqueue_many([sd.JobSpec("t", {}, id="many-kept", keep_done=3600),
                        sd.JobSpec("t", {}, id="many-plain")])
        typed = sd.task("t", body=dict)  # a typed task passes it as any option
        q.enqueue(typed, {}, id="typed-kept", keep_done=3600)

        async def enqueue_async() -> None:
            async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
                await aq.enqueue("t", {}, id="async-kept", keep_done=3600)

        asyncio.run(enqueue_async())
        extra = ["many-kept", "typed-kept", "async-kept"]
        assert sorted(run_all(q)) == sorted([*kept, *plain, *extra, "many-plain"])
        assert [state(q, i) for i in [*kept, *extra]] == ["done"] * 6
        assert [state(q, i) for i in [*plain, "many-plain"]] == [None] * 4
        again = q.enqueue("t", {}, id="kept-0")  # the tombstone keeps the id taken
        assert not again.created and again.state == "done"
        assert q.enqueue("t", {}, id="plain-0").created
    with sd.Queue(queue_name + "-k", url=redis_url, keep_done=3600) as q:
        q.enqueue("t", {}, id="forgotten", keep_done=0)  # 0: forgotten at once
        q.enqueue("t", {}, id="short", keep_done=60)
        q.enqueue("t", {}, id="queues")
        before = server_ms(q)
        run_all(q)
        assert [state(q, i) for i in ("forgotten", "short", "queues")] == [None, "done", "done"]
        expiry = {i: int(q.client.zscore(PartitionKeys(q.config.name, 0).done, i))
                  for i in ("short", "queues")}  # each tombstone's own expiry (epoch ms)
        after = server_ms(q)
        assert before + 60_000 <= expiry["short"] <= after + 60_000, expiry
        assert before + 3_600_000 <= expiry["queues"] <= after + 3_600_000, expiry
        assert not q.enqueue("t", {}, id="queues").created


def test_a_reservations_ack_keeps_its_jobs_tombstone(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", {}, id="kept", keep_done=3600)
        q.enqueue("t", {}, id="plain")
        promote(q, 2)
        taken = q.reserve("t", count=2, wait=5)
        assert sorted(r.id for r in taken) == ["kept", "plain"]
        for reservation in taken:
            reservation.ack()
        assert state(q, "kept") == "done" and state(q, "plain") is None


def test_the_receipts_keep_done_is_signed() -> None:
    key = b"k" * 32
    base = Receipt(2, "q", 0, "t", "j", "1-0", "g", "c", 1, 0, 1000, 0)
    for done in (None, 0, 60_000):
        receipt = signed(msgspec.structs.replace(base, done_ms=done), key)
        assert is_genuine(receipt, key)
        assert not is_genuine(msgspec.structs.replace(receipt, done_ms=86_400_000), key)
    # a receipt without one signs as before the field existed
    assert signed(base, key).tag == signed(msgspec.structs.replace(base, done_ms=None), key).tag


@pytest.mark.parametrize("value", [-1, "x", float("nan")])
def test_a_bad_keep_done_names_the_field(queue: sd.Queue, value: object) -> None:
    with pytest.raises(sd.ValidationError) as caught:
        queue.enqueue("t", {}, keep_done=value)  # type: ignore[arg-type]
    assert caught.value.field == "keep_done" and "keep_done" in str(caught.value)
    with pytest.raises(sd.ValidationError) as caught:
        queue.enqueue_many([sd.JobSpec("t", {}, keep_done=value)])  # type: ignore[arg-type]
    assert caught.value.field == "keep_done"
