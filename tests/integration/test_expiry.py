"""Expiry (docs/expiry.md): a job whose deadline passed never runs, wherever the deadline finds
it: delayed with no worker running (promoteDue), waiting in its stream behind a backlog (the
open step's clock), held by a consumer that went silent (the reclaim); it goes to the dead
letters with the error ``expired`` (no attempt spent), shows in the events and the metrics,
keeps its deadline through retries, loses it on a replay and moves it with a reschedule."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.integration.test_pull import promote
from tests.support.expiring import deadline_of, give_deadline, server_ms
from tests.support.promoting import promote_due
from tests.support.redis_server import free_port
from tests.system import test_docs_examples as docs_examples

pytestmark = pytest.mark.timeout(60)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example
PAST = 0.4  # seconds slept so that a deadline 150 ms ahead has passed
LATER = 0.8  # the same for 0.5 s: a job that must be promoted or taken before its deadline


@pytest.fixture
def evq(redis_url: str, queue_name: str) -> Iterator[sd.Queue]:
    """A queue with events on (one partition), short backoff."""
    q = sd.Queue(queue_name, url=redis_url, events=True, backoff=[0.0], max_attempts=3)
    yield q
    q.close()


def kinds(q: sd.Queue, job_id: str) -> list[str]:
    """The kinds of one job's events, oldest first."""
    return [e.kind for e in q.events(follow=False) if e.id == job_id]


def drain(q: sd.Queue, handler: Any = None, metrics: bool = False) -> tuple[list[str],
                                                                             sd.Worker]:
    """Serve topic ``t`` until idle; the ids the handler saw, in order, and the worker."""
    ran: list[str] = []
    worker = sd.Worker(q, concurrency=2, metrics_port=free_port() if metrics else None)

    @worker.handler("t")
    def handle(job: sd.Job) -> None:
        ran.append(job.id)
        if handler is not None:
            handler(job)

    worker.run(until_idle=True)
    return ran, worker


def expired_sample(worker: sd.Worker) -> float | None:
    """``streamdelay_jobs_total{outcome="expired"}`` of topic ``t``."""
    assert worker.metrics is not None
    return worker.metrics.registry.get_sample_value(  # type: ignore[no-any-return]
        "streamdelay_jobs_total", {"queue": worker.config.name, "topic": "t",
                                   "group": worker.group, "outcome": "expired"})


def assert_expired(q: sd.Queue, job_id: str, attempts: int = 0) -> None:
    """The job is dead with the error ``expired``."""
    dead = {d.id: d for d in q.dead_list("t", limit=100)}
    assert dead[job_id].error == "expired"
    assert dead[job_id].attempts == attempts
    info = q.get(job_id)
    assert info is not None and info.state == "dead"


def test_a_job_past_its_deadline_with_no_worker_running_never_runs(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="late", expires=0.15)
    evq.enqueue("t", {"n": 2}, id="fine", expires=60)
    info = evq.get("late")
    assert info is not None and info.expires_at == info.due + 150 == deadline_of(evq, "late")
    time.sleep(PAST)  # no worker, no dispatcher: the deadline passes while it is delayed
    ran, worker = drain(evq, metrics=True)
    assert ran == ["fine"]
    assert_expired(evq, "late")
    assert kinds(evq, "late") == ["enqueued", "expired"]  # never promoted, never started
    assert expired_sample(worker) == 1  # counted by the embedded dispatcher
    events = [e for e in evq.events(follow=False) if e.kind == "expired"]
    assert [int(e.detail) for e in events] == [deadline_of(evq, "late")]


def test_a_job_whose_deadline_passes_in_its_stream_never_runs(evq: sd.Queue) -> None:
    """Promoted in time, then waiting behind a backlog (no consumer) past its deadline: the
    consumer's read carries the server clock, and the open step settles it as expired."""
    evq.enqueue_many([sd.JobSpec("t", {"n": i}, id=f"j{i}", expires=0.5 if i < 2 else None)
                      for i in range(4)])
    for i in range(4):  # the deadline stored exactly, as for a single enqueue (not by timing)
        info = evq.get(f"j{i}")
        assert info is not None
        if i < 2:
            assert info.expires_at == info.due + 500 == deadline_of(evq, f"j{i}")
        else:
            assert info.expires_at is None
    promote(evq, 4)
    time.sleep(LATER)
    ran, worker = drain(evq, metrics=True)
    assert sorted(ran) == ["j2", "j3"]
    for i in range(2):
        assert_expired(evq, f"j{i}")
        assert kinds(evq, f"j{i}") == ["enqueued", "promoted", "expired"]
    assert expired_sample(worker) == 2  # settled by the worker, outcome expired
    assert worker.counts["expired"] == 2 and worker.counts["dead"] == 0


def test_a_retry_keeps_the_deadline(evq: sd.Queue) -> None:
    """A retry due after the job's deadline is expired when it comes due, not run again."""
    evq.enqueue("t", {"n": 1}, id="flaky", expires=2.0)

    def fail_once(job: sd.Job) -> None:
        raise sd.Retry(delay=2.5)  # due again after the deadline

    ran, _ = drain(evq, fail_once)
    assert ran == ["flaky"]
    assert_expired(evq, "flaky", attempts=1)
    assert kinds(evq, "flaky")[-2:] == ["retried", "expired"]


def test_a_replay_drops_the_deadline_and_runs_the_job(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="late")
    evq.client.hset(PartitionKeys(evq.name, 0).prefix + "opts", "late",
                    f"7|{server_ms(evq) + 150}|tenant-a")  # priority and key stay
    time.sleep(PAST)
    ran, _ = drain(evq)
    assert ran == []
    assert_expired(evq, "late")
    assert evq.dead_replay("t") == 1
    assert evq.client.hget(PartitionKeys(evq.name, 0).prefix + "opts", "late") == b"7||tenant-a"
    ran, _ = drain(evq)
    assert ran == ["late"]


def test_a_replayed_job_without_other_options_loses_its_opts_field(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="late", expires=0.15)
    time.sleep(PAST)
    assert drain(evq)[0] == []
    assert evq.dead_replay("t", id="late") == 1
    assert deadline_of(evq, "late") is None
    assert not evq.client.hexists(PartitionKeys(evq.name, 0).prefix + "opts", "late")
    assert drain(evq)[0] == ["late"]


def test_a_reschedule_moves_the_deadline_with_the_due_time(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="r", delay=60, expires=120)
    before = evq.get("r")
    assert before is not None and before.expires_at == before.due + 120_000
    assert evq.reschedule("r", delay=600)
    after = evq.get("r")
    assert after is not None and after.due > before.due
    assert after.expires_at == after.due + 120_000  # the window after the due time is kept


def test_a_reschedule_of_an_expired_job_drops_its_deadline(evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="late", expires=0.15)
    time.sleep(PAST)
    assert drain(evq)[0] == []
    assert evq.reschedule("late", delay=0)
    assert deadline_of(evq, "late") is None
    assert drain(evq)[0] == ["late"]


def test_the_reclaim_expires_a_job_whose_silent_holder_outlived_its_deadline(
        evq: sd.Queue) -> None:
    evq.enqueue("t", {"n": 1}, id="held", ttr=1, expires=1.0)
    evq.reserve("t", group="workers", consumer="gone")  # registers the worker's group
    promote(evq)
    assert [r.id for r in evq.reserve("t", group="workers", consumer="gone", wait=1)] == ["held"]
    time.sleep(1.4)  # past its ttr and its deadline: the reclaim meets it
    ran, _ = drain(evq)
    assert ran == []
    assert_expired(evq, "held", attempts=1)  # the silent delivery was an attempt
    assert kinds(evq, "held")[-1] == "expired" and "dead" not in kinds(evq, "held")


def test_a_hand_back_after_the_deadline_expires_the_job(evq: sd.Queue) -> None:
    """A delivery handed back (a shutdown, a pause, a reservation released) after its job's
    deadline does not go back to the stream: the job is dead, ``expired``."""
    evq.enqueue("t", {"n": 1}, id="back", expires=0.5)
    evq.reserve("t")  # registers the group
    promote(evq)
    [r] = evq.reserve("t", wait=1)
    time.sleep(LATER)
    assert r.release() is False  # not handed back
    assert_expired(evq, "back")
    assert kinds(evq, "back")[-1] == "expired"
    assert evq.reserve("t", wait=0.2) == []


def test_a_job_handed_to_a_live_worker_after_its_deadline_is_not_run(evq: sd.Queue) -> None:
    """The Worker's own pending list (``claim --to``): the entries it finds there are read with
    the server clock too (``XRANGE`` and ``TIME`` in one pipeline)."""
    evq.enqueue("t", {}, id="handed", ttr=30, expires=0.5)
    keys = PartitionKeys(evq.name, 0)
    worker = sd.Worker(evq, group="g", consumer="live-1", dispatch=False,
                       reclaim_interval=0.1, block=0.1)
    ran: list[str] = []
    worker.handler("t")(lambda job: ran.append(job.id))

    async def scenario() -> None:
        await worker.register()
        dispatcher = sd.Dispatcher(evq.config)
        assert await promote_due(dispatcher, keys) == 1
        await dispatcher.close()
        evq.client.xreadgroup("g", "ghost", {keys.stream("t"): ">"}, count=1)  # goes silent
        serving = asyncio.ensure_future(worker.serve())
        await asyncio.sleep(LATER)  # live-1 reads (nothing left); the deadline passes
        assert evq.claim("g", min_idle=0, to="live-1").moved == ["handed"]
        deadline = time.monotonic() + 5
        while not evq.dead_list("t") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        worker.stop()
        await serving

    asyncio.run(scenario())
    assert ran == []
    assert_expired(evq, "handed")
    assert worker.counts["expired"] == 1


def _expire(q: sd.Queue, entry: str, job_id: str) -> list[int]:
    keys = PartitionKeys(q.name, 0)
    reply = run_step_sync(q.client, script("expireJobs").call(
        keys.script_keys(), ["g", "t", job_id, entry]))
    return [int(x) for x in reply]


def test_expire_jobs_checks_the_deadline_again_on_its_own_clock(evq: sd.Queue) -> None:
    """A delivery whose job's deadline is still ahead on the script's clock (a reader's clock
    from elsewhere) is handed back, not dead-lettered; a stale delivery is only acknowledged;
    a second call finds the delivery no longer current."""
    evq.enqueue("t", {"n": 1}, id="a", expires=60)
    promote(evq)
    keys = PartitionKeys(evq.name, 0)
    evq.client.xgroup_create(keys.stream("t"), "g", id="0")
    [[_, [(entry, fields)]]] = evq.client.xreadgroup("g", "c", {keys.stream("t"): ">"})
    assert int(fields[b"x"]) == deadline_of(evq, "a")  # promoteDue wrote the deadline
    assert _expire(evq, entry.decode(), "a") == [1]  # not expired: back at the stream tail
    [[_, [(entry, fields)]]] = evq.client.xreadgroup("g", "c", {keys.stream("t"): ">"})
    assert int(fields[b"x"]) == deadline_of(evq, "a")  # the new entry carries it too
    give_deadline(evq, "a", -1)
    assert _expire(evq, entry.decode(), "a") == [2]
    assert _expire(evq, entry.decode(), "a") == [0]  # retried: stale
    assert_expired(evq, "a")


def test_a_plain_queue_writes_no_opts_key_and_no_deadline_field(queue: sd.Queue) -> None:
    queue.enqueue("t", {"n": 1}, id="p")
    promote(queue)
    keys = PartitionKeys(queue.name, 0)
    [(_, fields)] = queue.client.xrange(keys.stream("t"))
    assert set(fields) == {b"id", b"rec"}
    assert not queue.client.exists(keys.prefix + "opts")


def test_the_docs_example_runs(example_env: dict[str, str]) -> None:
    assert run_example("expiry.py", example_env).splitlines() == [
        "paged dev for page-2",
        "dead: page-1 expired after 0 attempts",
        "events of page-1: ['enqueued', 'expired']",
        "replayed: 1",
        "paged ops for page-1",
    ]
