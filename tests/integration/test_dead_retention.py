"""Dead-letter retention (docs/reliability.md#dead-letter-retention): with ``dead_ttl`` or
``dead_max`` a real dispatcher purges dead jobs older than the ttl, or beyond the newest
``dead_max`` of their topic, oldest first, at most 100 per promoteDue call; each is counted
(outcome ``purged``) and written as a ``purged`` event. Unset keeps every dead job."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.redis_server import free_port

pytestmark = pytest.mark.timeout(90)


def kill(q: sd.Queue, n: int) -> list[str]:
    """Enqueue n jobs of topic t that fail on their only attempt and run them dead, through a
    queue of the same name without retention (its worker's dispatcher purges nothing); the
    dead list's ids, oldest first. ``q``'s retention is written by its first call after."""
    plain = sd.Queue(q.config.name, url=q.config.url, max_attempts=1, events=q.config.events)
    for i in range(n):
        plain.enqueue("t", {"i": i}, id=f"j{i}")
    worker = sd.Worker(plain, concurrency=1)

    @worker.handler("t")
    def fail(job: sd.Job) -> None:
        raise RuntimeError("no")

    worker.run(until_idle=True)
    plain.close()
    dead = [d.id for d in q.dead_list("t", limit=1000)]
    assert len(dead) == n
    return dead


def test_bad_retention_settings_name_the_field(redis_url: str, queue_name: str) -> None:
    for option, value in (("dead_ttl", -1), ("dead_max", 0), ("dead_ttl", "x")):
        with pytest.raises(sd.ValidationError) as caught:
            sd.Queue(queue_name, url=redis_url, **{option: value})
        assert caught.value.field == option and option in str(caught.value)


def test_unset_retention_keeps_every_dead_job(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        dead = kill(q, 3)
        dispatcher = sd.Dispatcher(q.config)
        for _ in range(3):
            asyncio.run(dispatcher.promote_once(PartitionKeys(queue_name, 0)))
        assert [d.id for d in q.dead_list("t")] == dead
        assert dispatcher.purged == {}


def test_dead_max_purges_the_oldest_surplus_bounded_per_call(redis_url: str,
                                                             queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1, events=True,
                  dead_max=2) as q:
        dead = kill(q, 150)
        keys = PartitionKeys(queue_name, 0)
        # a dispatcher whose own queue sets no retention applies the one stored in Redis
        dispatcher = sd.Dispatcher(dataclasses.replace(q.config, dead_max=None))
        first = asyncio.run(dispatcher.promote_once(keys))
        assert dispatcher.purged == {"t": 100}  # the bound of one call
        assert first.next_due == first.now  # more left: called again at once
        assert [d.id for d in q.dead_list("t", limit=1000)] == dead[100:]
        asyncio.run(dispatcher.promote_once(keys))
        assert dispatcher.purged == {"t": 148}
        assert [d.id for d in q.dead_list("t")] == dead[-2:]  # the newest two are kept
        assert q.get(dead[0]) is None and q.get(dead[-1]) is not None
        purged = [e.id for e in q.events(follow=False) if e.kind == "purged"]
        assert sorted(purged) == sorted(dead[:148])
        asyncio.run(dispatcher.promote_once(keys))  # nothing more: idempotent
        assert dispatcher.purged == {"t": 148}


def test_dead_ttl_purges_on_time_with_a_running_dispatcher(redis_url: str,
                                                           queue_name: str) -> None:
    ttl = 1.0
    with sd.Queue(queue_name, url=redis_url, max_attempts=1, events=True, dead_ttl=ttl) as q:
        dead = kill(q, 3)
        died = {d.id: int(d.entry_id.split("-")[0]) for d in q.dead_list("t")}
        # a safety tick far longer than the test: only promoteDue's next due time wakes it
        dispatcher = sd.Dispatcher(q.config, safety_tick=60.0)

        async def main() -> float:
            task = asyncio.create_task(dispatcher.run())
            start = time.monotonic()
            while q.dead_list("t"):
                assert time.monotonic() - start < 20, "dead jobs outlived dead_ttl"
                await asyncio.sleep(0.05)
            dispatcher.stop()
            await task
            return time.monotonic() - start

        asyncio.run(main())
        assert dispatcher.purged == {"t": 3}
        events = {e.id: e for e in q.events(follow=False) if e.kind == "purged"}
        assert sorted(events) == sorted(dead)
        for job_id, event in events.items():  # never before its time (server clock)
            assert event.at >= died[job_id] + ttl * 1000, (job_id, event.at, died[job_id])


def test_a_workers_dispatcher_counts_what_it_purged_in_the_jobs_metric(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1, dead_max=1) as q:
        dead = kill(q, 3)
        worker = sd.Worker(q, concurrency=1, metrics_port=free_port())
        worker.handler("t")(lambda job: None)

        async def main() -> None:
            task = asyncio.create_task(worker.serve())
            start = time.monotonic()
            while [d.id for d in q.dead_list("t")] != dead[-1:]:
                assert time.monotonic() - start < 30 and not task.done(), "surplus kept"
                await asyncio.sleep(0.05)
            worker.stop()
            await task

        asyncio.run(main())
        assert worker.metrics is not None
        assert worker.metrics.registry.get_sample_value(
            "streamdelay_jobs_total", {"queue": queue_name, "topic": "t",
                                       "group": worker.group, "outcome": "purged"}) == 2
