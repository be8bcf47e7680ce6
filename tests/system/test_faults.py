"""Faults around the worker: SIGTERM and a second signal, Redis killed and restarted, dropped
connections, blocking reads longer than redis-py's default socket timeout.

Real worker processes (``tests/support/apps/reliability_app.py``), real signals, real redis-server
processes. Figures worth keeping are printed as ``MEASURED ...`` lines (``pytest -s``).
"""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import streamdelay as sd
from tests.support.apps.reliability_app import Event, Workers, count, wait_for
from tests.support.redis_server import RedisServer


def _runs(events: list[Event], job_id: str) -> list[tuple[str, int, int]]:
    return [(e.ev, e.attempt, e.pid) for e in events if e.id == job_id]


def test_sigterm_finishes_running_jobs_and_hands_back_the_rest_at_once(
        workers: Workers, q: sd.Queue) -> None:
    grace, ttr = 4.0, 60.0
    first = workers.start("a", "--grace", str(grace), "--ttr", str(ttr))
    first.wait_ready()
    quick = [q.enqueue("slow", {"seconds": 1.5}, id=f"quick{i}").id for i in range(4)]
    long = [q.enqueue("slow", {"seconds": 600}, id=f"long{i}").id for i in range(4)]
    long.append(q.enqueue("sync_slow", {"seconds": 600}, id="long-sync").id)
    wait_for(lambda: len(count(workers.events(), "start", first.pid)) == 9, 20, "9 starts on a")
    second = workers.start("b", "--sleep-cap", "0.2")
    second.wait_ready()
    sent = first.signal(signal.SIGTERM)
    assert first.wait(grace + 15) == 0
    exited = time.time() - sent
    wait_for(lambda: len(count(workers.events(), "done")) == 9, 30, "every job done")
    events = workers.events()
    for job_id in quick:  # finished inside the grace period, on the worker that was stopping
        assert _runs(events, job_id) == [("start", 1, first.pid), ("done", 1, first.pid)]
    handed_back = []
    for job_id in long:  # cancelled after the grace period, handed back, not counted
        assert _runs(events, job_id) == [("start", 1, first.pid), ("start", 1, second.pid),
                                         ("done", 1, second.pid)]
        handed_back.append(next(e.t for e in events
                                if e.id == job_id and e.pid == second.pid) - sent)
    assert max(handed_back) < grace + 8 < ttr  # at once after the grace period, not after ttr
    assert handed_back[-1] >= exited  # long-sync's thread never runs beside its next run
    assert min(handed_back) >= grace - 0.5
    assert all(q.get(job_id) is None for job_id in quick + long)
    print(f"MEASURED SIGTERM grace {grace:g}s: exit 0 after {exited:.2f}s; unfinished jobs "
          f"restarted elsewhere {min(handed_back):.2f}-{max(handed_back):.2f}s after the signal"
          f" (ttr {ttr:g}s); duplicates 0")


def test_second_signal_exits_at_once_and_jobs_return_after_ttr(
        workers: Workers, q: sd.Queue) -> None:
    ttr = 3.0
    first = workers.start("a", "--grace", "60", "--ttr", str(ttr))
    first.wait_ready()
    ids = [q.enqueue("slow", {"seconds": 600}, id=f"j{i}", ttr=ttr).id for i in range(5)]
    wait_for(lambda: len(count(workers.events(), "start", first.pid)) == 5, 20, "5 starts on a")
    second = workers.start("b", "--sleep-cap", "0.2")
    second.wait_ready()
    first.signal(signal.SIGTERM)
    time.sleep(0.5)
    killed_at = first.signal(signal.SIGTERM)
    assert first.wait(5) != 0
    exited = time.time() - killed_at
    assert exited < 3
    wait_for(lambda: len(count(workers.events(), "done")) == 5, ttr + 20, "every job done")
    events = workers.events()
    back = []
    for job_id in ids:  # abandoned, so the delivery counts as a failed attempt
        assert _runs(events, job_id) == [("start", 1, first.pid), ("start", 2, second.pid),
                                         ("done", 2, second.pid)]
        back.append(next(e.t for e in events if e.id == job_id and e.pid == second.pid)
                    - killed_at)
    assert min(back) >= ttr * 2 / 3 - 0.5
    print(f"MEASURED second signal: exit after {exited:.2f}s; jobs back after "
          f"{min(back):.2f}-{max(back):.2f}s (ttr {ttr:g}s); duplicates 0")


class Producer(threading.Thread):
    """Enqueues ``total`` jobs over about ``seconds``; keeps the ids whose enqueue returned."""

    def __init__(self, url: str, queue: str, total: int, seconds: float) -> None:
        super().__init__(daemon=True)
        self.queue = sd.Queue(queue, url=url, retry_for=30)
        self.total, self.pause = total, seconds / total
        self.acknowledged: list[str] = []
        self.failed = 0

    def run(self) -> None:
        """Enqueue one job at a time, each due within a second."""
        rng = random.Random(3)
        for i in range(self.total):
            try:
                self.queue.enqueue("fast", {"i": i}, id=f"p{i}", delay=rng.uniform(0, 1))
                self.acknowledged.append(f"p{i}")
            except sd.StreamdelayError:
                self.failed += 1
            time.sleep(self.pause)
        self.queue.close()


def test_redis_killed_and_restarted_under_load_loses_nothing(
        durable_redis: RedisServer, tmp_path: Path) -> None:
    started = Workers(durable_redis.url, "durable", tmp_path)
    try:
        pair = [started.start("a", "--ttr", "5"), started.start("b", "--ttr", "5")]
        for worker in pair:
            worker.wait_ready()
        producer = Producer(durable_redis.url, "durable", 800, 8.0)
        producer.start()
        time.sleep(2.5)
        durable_redis.kill()
        time.sleep(1.5)
        durable_redis.start()
        restarted = time.time()
        producer.join(60)
        assert not producer.is_alive() and producer.failed == 0
        wanted = set(producer.acknowledged)
        wait_for(lambda: wanted <= set(count(started.events(), "done")), 60,
                 "every acknowledged job handled")
        events = started.events()
        assert all(worker.process.poll() is None for worker in pair)  # recovered, not restarted
        for worker in pair:
            assert any(e.t > restarted and e.pid == worker.pid for e in events)
            assert "retrying" in worker.log()  # it did see the outage
        runs = count(events, "done")
        duplicates = sum(n - 1 for n in runs.values())
        print(f"MEASURED redis SIGKILL+restart: {len(wanted)} jobs enqueued, all handled, "
              f"{duplicates} duplicate runs")
    finally:
        started.stop_all()


def test_blocking_read_outlives_default_socket_timeout_and_dropped_connections(
        own_redis: RedisServer, tmp_path: Path) -> None:
    started = Workers(own_redis.url, "dropped", tmp_path)
    q = sd.Queue("dropped", url=own_redis.url)
    try:
        worker = started.start("a", "--block", "7")
        worker.wait_ready()
        time.sleep(8.0)  # one whole XREADGROUP BLOCK 7000 with nothing to read, past 5 s
        assert "redis unavailable" not in worker.log()
        assert "Timeout" not in worker.log()
        q.enqueue("fast", {}, id="after-idle")
        wait_for(lambda: count(started.events(), "done")["after-idle"], 10, "the first job")

        admin = own_redis.client()
        ids = []
        for burst in range(3):
            ids += [r.id for r in q.enqueue_many(
                [sd.JobSpec("fast", {}, id=f"b{burst}-{i}") for i in range(50)])]
            time.sleep(0.3)
            assert admin.execute_command("CLIENT", "KILL", "TYPE", "normal") >= 2
            time.sleep(0.7)
        wait_for(lambda: set(ids) <= set(count(started.events(), "done")), 30,
                 "every job after the dropped connections")
        assert worker.process.poll() is None
        assert set(count(started.events(), "done").values()) == {1}
    finally:
        started.stop_all()
        q.close()


def test_worker_keeps_its_duties_after_redis_restarts_empty(
        own_redis: RedisServer, tmp_path: Path) -> None:
    started = Workers(own_redis.url, "amnesia", tmp_path)
    q = sd.Queue("amnesia", url=own_redis.url)
    try:
        worker = started.start("a", "--ttr", "2", "--block", "4")
        worker.wait_ready()
        q.enqueue("slow", {"seconds": 3}, id="before", ttr=2)
        wait_for(lambda: count(started.events(), "start")["before"], 10, "the first job")
        own_redis.kill()  # no persistence: the groups, streams and jobs are gone
        own_redis.start()
        time.sleep(1.0)
        own_redis.client().flushall()  # and once more while the reader blocks (4 s)
        time.sleep(3.0)  # every loop of the worker meets the empty server
        q.enqueue("slow", {"seconds": 5}, id="after", ttr=2)
        wait_for(lambda: count(started.events(), "done")["after"], 30, "the job after restart")
        time.sleep(2.5)  # a second run would start about now if heartbeats had stopped
        assert _runs(started.events(), "after") == [("start", 1, worker.pid),
                                                     ("done", 1, worker.pid)]
        assert worker.process.poll() is None
    finally:
        started.stop_all()
        q.close()
