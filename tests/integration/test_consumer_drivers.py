"""One behaviour suite, run against both drivers of the consumer plans (docs/design.md): the
Worker, and the Reservation (``reserve`` from sync threads and from asyncio tasks; the HTTP
consumer routes drive the async one). Every test states what a consumer must do and checks it
for each driver: the rules are one engine's, not two engines kept alike (docs/pull.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.telemetry.lateness import LatenessWindow, lateness_plan
from streamdelay.web.serve_settings import ServeSettings
from tests.integration.test_pull import promote
from tests.support.served_app import serving

pytestmark = pytest.mark.timeout(120)
TOPIC = "eq.job"
GROUP = "eq"
DRIVERS = ["worker", "reserve-sync", "reserve-async", "http"]
# ok-*: succeed at once; flaky-*: fail 1 or 2 times, then succeed; dead-*: always fail (dead
# after max_attempts=3); retry-*: fail once with an explicit retry delay.
FAILS = {**{f"ok-{i}": 0 for i in range(6)}, **{f"flaky-{i}": 1 + i % 2 for i in range(6)},
         **{f"dead-{i}": 99 for i in range(4)}, **{f"retry-{i}": 1 for i in range(2)}}
Decide = Callable[[str, int, object], "tuple[str, float | None]"]


@dataclass
class Seen:
    """What the handlers saw: the attempts per job, and the most jobs held at once."""

    runs: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    order: list[str] = field(default_factory=list)  # the jobs in the order they first started
    held: int = 0
    most: int = 0
    per_key: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # held now
    most_per_key: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)
    # what the driver's metrics counted: deliveries by outcome, lateness observations
    metrics: Counter[str] = field(default_factory=Counter)

    def count(self, families: Iterable[Any]) -> None:
        """Add the settled deliveries and lateness observations of Prometheus metric
        ``families`` (a registry's ``collect()``, or a parsed ``/metrics`` text)."""
        for family in families:
            for sample in family.samples:
                if sample.name == "streamdelay_jobs_total":
                    self.metrics[sample.labels["outcome"]] += int(sample.value)
                elif sample.name == "streamdelay_lateness_seconds_count":
                    self.metrics["late"] += int(sample.value)

    def start(self, job_id: str, attempt: int) -> None:
        with self.lock:
            if job_id not in self.runs:
                self.order.append(job_id)
            self.runs[job_id].append(attempt)
            self.held += 1
            self.most = max(self.most, self.held)
            if job_id.startswith("{"):  # a fairness key's job (docs/priorities.md)
                key = job_id[1:job_id.index("}")]
                self.per_key[key] += 1
                self.most_per_key[key] = max(self.most_per_key[key], self.per_key[key])

    def end(self, job_id: str = "") -> None:
        with self.lock:
            self.held -= 1
            if job_id.startswith("{"):
                self.per_key[job_id[1:job_id.index("}")]] -= 1


def by_fails(job_id: str, attempt: int, body: object) -> tuple[str, float | None]:
    """The job set's rule: ("ack", None) or ("fail", retry delay or None: the backoff)."""
    fails = body["fails"] if isinstance(body, dict) else 0
    if attempt > fails:
        return "ack", None
    return "fail", (0.1 if job_id.startswith("retry-") else None)


def idle(q: sd.Queue) -> bool:
    """Nothing delayed, ready or reserved is left on the topic."""
    row = q.stats().topics.get(TOPIC)
    return row is not None and row.delayed + row.ready + row.reserved == 0


def new_queue(url: str, **options: object) -> sd.Queue:
    return sd.Queue(f"q{uuid.uuid4().hex[:10]}", url=url, max_attempts=3, backoff=[0.05],
                    **options)  # type: ignore[arg-type]


# --- the drivers ----------------------------------------------------------------------------

class Reported:
    """A reporter of a reserve caller's consumer observer (telemetry/observer.py): what a
    library user's metrics would be told."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def started(self, topic: str, group: str, late_ms: float, priority: str | None) -> None:
        with self.seen.lock:
            self.seen.metrics["late"] += 1

    def settled(self, topic: str, group: str, outcome: str, count: int) -> None:
        with self.seen.lock:
            self.seen.metrics[outcome] += count


def run_worker(q: sd.Queue, decide: Decide, until: Callable[[sd.Queue], bool],
               seconds: float, seen: Seen, block: float = 1.0) -> None:
    worker = sd.Worker(q, group=GROUP, concurrency=8, metrics_port=0, block=block)

    @worker.handler(TOPIC)
    async def handle(job: sd.Job) -> None:
        seen.start(job.id, job.attempt)
        try:
            await asyncio.sleep(0.01)  # held a while: the most held at once is measured
            action, delay = decide(job.id, job.attempt, job.body)
        finally:
            seen.end(job.id)
        if action == "fail":
            if delay is not None:
                raise sd.Retry(delay=delay)
            raise RuntimeError("boom")

    async def main() -> None:
        serving = asyncio.create_task(worker.serve())
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not serving.done():
            await asyncio.sleep(0.1)
            if await asyncio.to_thread(until, q):
                break
        worker.stop()
        await serving

    asyncio.run(main())
    assert worker.metrics is not None
    seen.count(worker.metrics.registry.collect())


def settle_sync(r: sd.Reservation, decide: Decide, seen: Seen) -> None:
    seen.start(r.id, r.attempt)
    try:  # the work ends before its settle, as a worker's handler returns before its ack:
        time.sleep(0.01)  # the settle frees the lease, and another consumer may start a job
        action, delay = decide(r.id, r.attempt, r.body)  # before this one's reply came back
    finally:
        seen.end(r.id)
    if action == "ack":
        r.ack()
    else:
        r.fail("RuntimeError: boom", retry_delay=delay)


def run_sync_reserve(q: sd.Queue, decide: Decide, until: Callable[[sd.Queue], bool],
                     seconds: float, seen: Seen, consumers: int = 2) -> None:
    loop = asyncio.new_event_loop()
    dispatcher = sd.Dispatcher(q.config)
    promoting = threading.Thread(target=loop.run_until_complete, args=(dispatcher.run(),),
                                 daemon=True)
    promoting.start()
    errors: list[BaseException] = []
    stop = threading.Event()

    def consume(name: str) -> None:
        mine = sd.Queue(q.name, url=q.config.url, max_attempts=3, backoff=[0.05],
                        max_body_bytes=q.config.max_body_bytes,
                        partitions=q.config.partitions)
        mine.observer.reporters.append(Reported(seen))
        try:
            while not stop.is_set():
                for r in mine.reserve(TOPIC, group=GROUP, consumer=name, wait=0.3, count=4):
                    settle_sync(r, decide, seen)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            mine.close()

    threads = [threading.Thread(target=consume, args=(f"sync-{i}",)) for i in range(consumers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until(q):
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(30)
    loop.call_soon_threadsafe(dispatcher.stop)
    promoting.join(10)
    loop.run_until_complete(dispatcher.close())
    loop.close()
    assert not errors, errors


def run_async_reserve(q: sd.Queue, decide: Decide, until: Callable[[sd.Queue], bool],
                      seconds: float, seen: Seen, consumers: int = 3) -> None:
    async def consume(aq: sd.AsyncQueue, name: str, stop: asyncio.Event) -> None:
        while not stop.is_set():
            for r in await aq.reserve(TOPIC, group=GROUP, consumer=name, wait=0.3, count=3):
                seen.start(r.id, r.attempt)
                try:  # the work ends before its settle (settle_sync)
                    await asyncio.sleep(0.01)
                    action, delay = decide(r.id, r.attempt, r.body)
                finally:
                    seen.end(r.id)
                if action == "ack":
                    await r.ack()
                else:
                    await r.fail("RuntimeError: boom", retry_delay=delay)

    async def main() -> None:
        async with sd.AsyncQueue(q.name, url=q.config.url, max_attempts=3, backoff=[0.05],
                                 max_body_bytes=q.config.max_body_bytes,
                                 partitions=q.config.partitions) as aq:
            aq.observer.reporters.append(Reported(seen))
            dispatcher = sd.Dispatcher(aq.config)
            promoting = asyncio.create_task(dispatcher.run())
            stop = asyncio.Event()
            consumers_ = [asyncio.create_task(consume(aq, f"async-{i}", stop))
                          for i in range(consumers)]
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not await asyncio.to_thread(until, q):
                await asyncio.sleep(0.1)
            stop.set()
            await asyncio.gather(*consumers_)
            dispatcher.stop()
            await promoting
            await dispatcher.close()

    asyncio.run(main())


def run_http(q: sd.Queue, decide: Decide, until: Callable[[sd.Queue], bool],
             seconds: float, seen: Seen, consumers: int = 3) -> None:
    """HTTP consumers of ``streamdelay serve``'s app (on uvicorn in a thread of this process:
    tests/support/served_app.py), which promotes and reclaims as ``serve`` does."""
    settings = ServeSettings(url=q.config.url, queues=(q.name,), queue_options={
        "max_attempts": 3, "backoff": [0.05], "max_body_bytes": q.config.max_body_bytes,
        "partitions": q.config.partitions})
    base = f"/v1/queues/{q.name}"

    async def consume(client: httpx.AsyncClient, name: str, stop: asyncio.Event) -> None:
        while not stop.is_set():
            answer = await client.post(f"{base}/topics/{TOPIC}:reserve", json={
                "group": GROUP, "consumer": name, "wait_ms": 300, "count": 3})
            if answer.status_code == 204:
                continue
            assert answer.status_code == 200, answer.text
            for d in answer.json()["deliveries"]:
                seen.start(d["id"], d["attempt"])
                try:  # the work ends before its settle (settle_sync)
                    await asyncio.sleep(0.01)
                    action, delay = decide(d["id"], d["attempt"], d["body"])
                finally:
                    seen.end(d["id"])
                if action == "ack":
                    settled = await client.post(f"{base}/deliveries/{d['receipt']}:ack")
                else:
                    settled = await client.post(
                        f"{base}/deliveries/{d['receipt']}:fail",
                        json={"error": "RuntimeError: boom",
                              **({} if delay is None else {"retry_delay": delay})})
                assert settled.status_code == 200, settled.text

    async def main(url: str) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            stop = asyncio.Event()
            tasks = [asyncio.create_task(consume(client, f"http-{i}", stop))
                     for i in range(consumers)]
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline and not await asyncio.to_thread(until, q):
                await asyncio.sleep(0.1)
            stop.set()
            await asyncio.gather(*tasks)
            answer = await client.get("/metrics")
            assert answer.status_code == 200, answer.text
            seen.count(text_string_to_metric_families(answer.text))

    with serving(settings) as url:
        asyncio.run(main(url))


RUN = {"worker": run_worker, "reserve-sync": run_sync_reserve,
       "reserve-async": run_async_reserve, "http": run_http}


def consume(driver: str, q: sd.Queue, decide: Decide = by_fails,
            until: Callable[[sd.Queue], bool] = idle, seconds: float = 60.0,
            block: float = 1.0) -> Seen:
    """Run ``driver`` on ``q``'s topic until ``until(q)`` (or ``seconds``); what it saw.
    ``block``: a worker's longest read."""
    seen = Seen()
    if driver == "worker":
        run_worker(q, decide, until, seconds, seen, block)
    else:
        RUN[driver](q, decide, until, seconds, seen)
    return seen


# --- the behaviours ---------------------------------------------------------------------

def enqueue_job_set(q: sd.Queue) -> None:
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": fails}, id=job_id)
                    for job_id, fails in FAILS.items()])


def assert_job_set_done(q: sd.Queue, seen: Seen) -> None:
    """Each job ran as often as its rule says, and only the dead-* jobs are dead (3 attempts)."""
    expected = {job_id: list(range(1, min(fails, 2) + 2)) for job_id, fails in FAILS.items()}
    assert {k: sorted(v) for k, v in seen.runs.items()} == expected
    assert {d.id: d.attempts for d in q.dead_list(TOPIC, limit=1000)} == {
        f"dead-{i}": 3 for i in range(4)}
    assert all((info := q.get(job_id)) is None or info.state == "dead" for job_id in FAILS)


@pytest.mark.parametrize("driver", DRIVERS)
def test_retries_backoff_and_dead_letters(redis_url: str, driver: str) -> None:
    q = new_queue(redis_url)
    enqueue_job_set(q)
    assert_job_set_done(q, consume(driver, q))
    q.close()


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_concurrency_limit_holds_and_spends_no_attempt(redis_url: str, driver: str,
                                                         partitions: int) -> None:
    """On 3 partitions the limit's state lives in partition 0's slot and a take elsewhere
    leases there first (docs/limits.md#more-than-one-partition): the same outcome."""
    q = new_queue(redis_url, partitions=partitions)
    q.limit(TOPIC, concurrency=2)
    enqueue_job_set(q)
    seen = consume(driver, q)
    assert_job_set_done(q, seen)  # the same attempts as without the limit
    assert seen.most <= 2
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_paused_topic_gives_nothing_until_resumed(redis_url: str, driver: str) -> None:
    q = new_queue(redis_url)
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": 0}, id=f"p{i}") for i in range(3)])
    assert q.pause(TOPIC)
    assert consume(driver, q, until=lambda q: False, seconds=1.5).runs == {}
    assert q.resume(TOPIC)
    seen = consume(driver, q)
    assert dict(seen.runs) == {f"p{i}": [1] for i in range(3)}  # a pause is not an attempt
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_body_that_cannot_be_opened_goes_dead_with_the_reason(redis_url: str, driver: str
                                                                ) -> None:
    q = new_queue(redis_url)
    q.enqueue(TOPIC, "x" * 3000, id="big")
    q.enqueue(TOPIC, {"fails": 0}, id="small")
    consumer_q = sd.Queue(q.name, url=redis_url, max_attempts=3, backoff=[0.05],
                          max_body_bytes=1024)
    seen = consume(driver, consumer_q)
    assert dict(seen.runs) == {"small": [1]}  # never handed to a handler
    [dead] = q.dead_list(TOPIC)
    assert dead.id == "big" and "over the limit of 1024" in dead.error
    consumer_q.close()
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_silent_holder_loses_its_job_after_its_ttr(redis_url: str, driver: str) -> None:
    q = new_queue(redis_url)
    q.enqueue(TOPIC, {"fails": 0}, id="held", ttr=1)
    q.reserve(TOPIC, group=GROUP, consumer="gone")  # registers the group
    promote(q)
    taken = q.reserve(TOPIC, group=GROUP, consumer="gone", wait=1)
    assert [r.id for r in taken] == ["held"]  # then never settled: its holder went silent
    seen = consume(driver, q)
    assert dict(seen.runs) == {"held": [2]}  # reclaimed after its ttr: the second attempt
    q.close()



@pytest.mark.parametrize("limited", [False, True], ids=["plain", "limited"])
@pytest.mark.parametrize("driver", DRIVERS)
def test_a_job_whose_deadline_passed_in_its_stream_is_never_handed_out(
        redis_url: str, driver: str, limited: bool) -> None:
    """Expiry at take (docs/expiry.md): jobs promoted in time whose deadline passes while they
    wait in the stream go dead with the error ``expired``, no attempt spent; the others run.
    Plain topics are read with the server clock in the same round trip, a limited topic's take
    reads it after the take."""
    q = new_queue(redis_url)
    if limited:
        q.limit(TOPIC, concurrency=2)
    expires = {"late-0": 0.15, "late-1": 0.15, "late-2": 0.15, "ok-0": None, "far": 60}
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": 0}, id=job_id, expires=seconds)
                    for job_id, seconds in expires.items()])
    promote(q, 5)
    time.sleep(0.4)  # the deadlines of late-* pass while they wait in the stream
    seen = consume(driver, q)
    assert dict(seen.runs) == {"ok-0": [1], "far": [1]}
    assert {d.id: (d.error, d.attempts) for d in q.dead_list(TOPIC)} == {
        f"late-{i}": ("expired", 0) for i in range(3)}
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_entry_without_a_job_id_is_dropped_at_once_with_its_reason_whatever_the_route(
        redis_url: str, driver: str, caplog: pytest.LogCaptureFixture) -> None:
    """An entry no job stands behind (a foreign client's, no ``id``) read while its topic
    became paused (the read in flight when the pause came: the core's sort hands a job's
    entry back) is not left pending for the reclaim to clean unseen: every driver drops it
    at once, logs the reason and counts it ``dropped`` (docs/security.md#garbage-from-other-
    clients); the job enqueued after the resume runs."""
    q = new_queue(redis_url)
    foreign = redis.Redis.from_url(redis_url)
    stream = PartitionKeys(q.name, 0).stream(TOPIC)
    q.reserve(TOPIC, group=GROUP, consumer="setup")  # registers the group: the entry is new
    done = threading.Event()

    def meanwhile() -> None:  # a worker's read blocks 5 s: in flight when the pause is seen
        time.sleep(1.0)
        q.pause(TOPIC)
        time.sleep(1.2)  # every driver has seen the pause (REFRESH_S)
        foreign.xadd(stream, {"foo": "bar"})
        time.sleep(1.0)
        q.resume(TOPIC)
        q.enqueue(TOPIC, {"fails": 0}, id="after")
        done.set()

    def cleaned(q: sd.Queue) -> bool:
        return (done.is_set() and idle(q) and foreign.xlen(stream) == 0
                and foreign.xpending(stream, GROUP)["pending"] == 0)

    caplog.set_level(logging.WARNING, "streamdelay")
    side = threading.Thread(target=meanwhile)
    side.start()
    seen = consume(driver, q, until=cleaned, seconds=30, block=5.0)
    side.join()
    assert dict(seen.runs) == {"after": [1]}
    logged = [r.getMessage() for r in caplog.records if "dropped stream entry" in r.getMessage()]
    assert len(logged) == 1 and "without a job id" in logged[0], logged
    assert seen.metrics["dropped"] == 1
    assert foreign.xlen(stream) == 0 and foreign.xpending(stream, GROUP)["pending"] == 0
    foreign.close()
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_job_that_can_never_run_goes_dead_and_every_driver_reports_it(
        redis_url: str, driver: str) -> None:
    """A real job whose delivered copy cannot be decoded (its blob is not MessagePack) can
    never run: every driver dead-letters it with the reason, without an attempt of a
    handler, and reports it ``dead`` to the observer (a worker's metrics, a reserve caller's
    reporters, ``serve``'s metrics) as it reports a handler's last failure."""
    q = new_queue(redis_url)
    foreign = redis.Redis.from_url(redis_url)
    keys = PartitionKeys(q.name, 0)
    q.reserve(TOPIC, group=GROUP, consumer="setup")  # registers the group: the entry is new
    entry = foreign.xadd(keys.stream(TOPIC), {
        "id": "corrupt", "rec": f"s|0|0|0|60000|3||{TOPIC}|".encode() + b"\x93\xc1"}).decode()
    foreign.hset(keys.jobs, "corrupt", f"s|0|0|0|60000|3|{entry}|{TOPIC}|".encode() + b"\x93\xc1")
    q.enqueue(TOPIC, {"fails": 0}, id="fine")
    seen = consume(driver, q, until=lambda q: idle(q) and bool(q.dead_list(TOPIC)))
    assert dict(seen.runs) == {"fine": [1]}
    assert [d.id for d in q.dead_list(TOPIC)] == ["corrupt"]
    assert seen.metrics["dead"] == 1
    foreign.close()
    q.close()


# --- staged topics: priorities and fairness keys (docs/priorities.md) ----------------------

@pytest.mark.parametrize("driver", DRIVERS)
def test_a_hot_key_backlog_does_not_hold_back_a_new_keys_first_job(redis_url: str,
                                                                    driver: str) -> None:
    q = new_queue(redis_url)
    hot = [q.enqueue(TOPIC, {"fails": 0}, id=f"h{i:03}", key="hot").id for i in range(40)]
    late = [q.enqueue(TOPIC, {"fails": 0}, id=f"n{i}", key=f"new{i}").id for i in range(3)]
    seen = consume(driver, q)
    order = seen.order
    assert sorted(seen.runs) == sorted(hot + late) and all(
        v == [1] for v in seen.runs.values())
    # keys take turns: each new key starts within one turn (4 lanes), plus the jobs the
    # consumers held at once when the new keys arrived
    assert max(order.index(jid) for jid in late) < 4 + 8
    q.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_key_concurrency_limit_holds_for_every_key(redis_url: str, driver: str) -> None:
    q = new_queue(redis_url)
    q.limit(TOPIC, key_concurrency=1)
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": i % 2}, id=f"j{i}", key=f"k{i % 3}")
                    for i in range(18)])
    seen = consume(driver, q)
    assert len(seen.runs) == 18 and sum(len(v) for v in seen.runs.values()) == 18 + 9
    assert dict(seen.most_per_key) == {"k0": 1, "k1": 1, "k2": 1}  # retries too
    # the limit is per key, not per topic: one take hands out a job of each key at once (how
    # many the driver's consumers then ran together is the machine's scheduling, not a promise)
    q.enqueue_many([sd.JobSpec(TOPIC, {"fails": 0}, id=f"again{i}", key=f"k{i}")
                    for i in range(3)])
    promote(q, 3)
    taken = q.reserve(TOPIC, group="eq", count=3, wait=5)
    assert sorted(r.id for r in taken) == [f"{{k{i}}}again{i}" for i in range(3)]
    for r in taken:
        r.ack()
    q.close()


# --- side effects: what every driver reports (docs/design.md#observer) -----------------------

def recorded_window(q: sd.Queue, starts: int) -> LatenessWindow:
    """The dashboard's lateness record of ``q`` once it holds ``starts`` starts (a driver
    flushes it when it stops; bounded)."""
    deadline = time.monotonic() + 15
    while True:
        window = drive_sync(q.client, lateness_plan(q.name, 5), 5.0)
        if sum(window.merged(TOPIC)) >= starts or time.monotonic() > deadline:
            return window
        time.sleep(0.1)


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_driver_reports_starts_outcomes_and_events(redis_url: str, driver: str) -> None:
    """The same side effects whichever driver took the jobs: each start in the dashboard's
    lateness record, each outcome in its throughput (handled: ok; a retry; dead), the driver's
    metrics (a worker's and the HTTP service's Prometheus counters; what a reserve caller's
    observer tells its reporters), and the lifecycle events the scripts write (started,
    succeeded, retried, dead)."""
    q = new_queue(redis_url, events=True)
    enqueue_job_set(q)
    seen = consume(driver, q)
    assert_job_set_done(q, seen)
    starts = sum(len(attempts) for attempts in seen.runs.values())
    dead = sum(1 for job_id in FAILS if job_id.startswith("dead-"))
    outcomes = {"ok": len(FAILS) - dead, "retried": starts - len(FAILS), "dead": dead}
    window = recorded_window(q, starts)
    assert sum(window.merged(TOPIC)) == starts
    throughput = window.throughput(TOPIC)
    assert {name: sum(throughput[name]) for name in outcomes} == outcomes
    assert {name: seen.metrics[name] for name in ("late", "handled", "retried", "dead")} == {
        "late": starts, "handled": outcomes["ok"], "retried": outcomes["retried"], "dead": dead}
    kinds = Counter(e.kind for e in q.events(TOPIC, follow=False))
    assert {kind: kinds[kind] for kind in ("started", "succeeded", "retried", "dead")} == {
        "started": starts, "succeeded": outcomes["ok"], "retried": outcomes["retried"],
        "dead": dead}
    q.close()
