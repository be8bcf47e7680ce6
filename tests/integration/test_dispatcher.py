"""The dispatcher: due order, never early by the server clock, bounded batches, early wake-ups,
and any number of dispatchers (in one loop and in other processes) promoting each job once."""

from __future__ import annotations

import asyncio
import random
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.codec import parse_record
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.support.redis_server import wait_until

pytestmark = pytest.mark.timeout(90)
ROOT = Path(__file__).resolve().parents[2]


def server_ms(client: redis.Redis) -> int:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def stream_entries(
    client: redis.Redis, keys: PartitionKeys, topic: str
) -> list[tuple[int, str, int]]:
    """(entry time ms, job id, job due ms) of every entry of a topic stream, in stream order."""
    rows = []
    for entry_id, fields in client.xrange(keys.stream(topic)):
        record = parse_record(fields[b"rec"])
        rows.append((int(entry_id.split(b"-")[0]), fields[b"id"].decode(), record.due))
    return rows


def test_shuffled_delays_run_in_due_order_and_never_early(queue: sd.Queue) -> None:
    delays = [0.05 + 0.025 * i for i in range(30)]
    random.Random(7).shuffle(delays)
    results = queue.enqueue_many(sd.JobSpec("t", None, delay=d, id=f"s{i}")
                                 for i, d in enumerate(delays))
    due = {r.id: r.due for r in results}
    worker = sd.Worker(queue, concurrency=1, block=0.05)
    starts: list[tuple[str, int, int]] = []

    @worker.handler("t")
    async def record(job: sd.Job) -> None:
        starts.append((job.id, job.due, server_ms(queue.client)))

    worker.run(until_idle=True)
    assert [job_id for job_id, _, _ in starts] == sorted(due, key=due.__getitem__)
    assert all(job_due == due[job_id] for job_id, job_due, _ in starts)
    early = [(job_id, started - job_due) for job_id, job_due, started in starts
             if started < job_due]
    assert early == []


def test_promote_moves_bounded_batches_in_due_order(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    now_s = server_ms(queue.client) / 1000
    ats = [now_s - 30 + 0.01 * i for i in range(400)]
    random.Random(3).shuffle(ats)
    queue.enqueue_many(sd.JobSpec("t", i, at=at, id=f"b{i}") for i, at in enumerate(ats))
    queue.enqueue("t", id="later", delay=600)

    async def promote_all() -> list[tuple[int, int, int]]:
        dispatcher = sd.Dispatcher(queue.config, batch=150)
        try:
            return [(r.moved, r.next_due, r.now) for r in
                    [await dispatcher.promote_once(keys) for _ in range(4)]]
        finally:
            await dispatcher.close()

    calls = asyncio.run(promote_all())
    assert [moved for moved, _, _ in calls] == [150, 150, 100, 0]
    assert all(next_due <= now for _, next_due, now in calls[:2])  # more is due: no sleep
    later = queue.get("later")
    assert later is not None and calls[-1][1] == later.due
    entries = stream_entries(queue.client, keys, "t")
    assert [d for _, _, d in entries] == sorted(d for _, _, d in entries)
    assert len({job_id for _, job_id, _ in entries}) == 400
    assert queue.client.hget(keys.counts, "t") == b"1"


def test_new_earliest_job_wakes_a_sleeping_dispatcher(queue: sd.Queue) -> None:
    keys = PartitionKeys(queue.name, 0)
    queue.enqueue("t", id="far", delay=600)

    async def scenario() -> float:
        dispatcher = sd.Dispatcher(queue.config, safety_tick=30.0)
        running = asyncio.create_task(dispatcher.run())
        try:
            await asyncio.sleep(0.5)  # asleep: the only job is ten minutes away
            assert dispatcher.promoted == 0
            result = await asyncio.to_thread(queue.enqueue, "t", None, id="soon", delay=0.2)
            while dispatcher.promoted == 0:
                await asyncio.sleep(0.01)
            return (server_ms(queue.client) - result.due) / 1000
        finally:
            dispatcher.stop()
            await running
            await dispatcher.close()

    late = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert late < 10  # woken by the marker, not the 30 s safety tick
    [(entry_ms, job_id, due)] = stream_entries(queue.client, keys, "t")
    assert job_id == "soon" and entry_ms >= due


def test_one_dispatcher_serves_every_partition(redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, partitions=3)
    q.enqueue_many(sd.JobSpec("t", i, id=f"p{i}", delay=0.1) for i in range(300))

    async def run_until_empty() -> int:
        dispatcher = sd.Dispatcher(q.config)
        running = asyncio.create_task(dispatcher.run())
        while dispatcher.promoted < 300:
            await asyncio.sleep(0.02)
        dispatcher.stop()
        await running
        await dispatcher.close()
        return dispatcher.promoted

    assert asyncio.run(asyncio.wait_for(run_until_empty(), 20)) == 300
    lengths = [q.client.xlen(PartitionKeys(q.name, p).stream("t")) for p in range(3)]
    assert sum(lengths) == 300 and all(lengths)
    q.close()


def _start_cli_dispatcher(url: str, queue: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "streamdelay", "dispatch", queue, "--url", url],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_many_dispatchers_at_once_promote_each_job_exactly_once(queue: sd.Queue) -> None:
    n = 3000
    keys = PartitionKeys(queue.name, 0)
    url = queue.config.url
    # each process names its connections, so the wait sees both connected (their signal
    # handlers are set by then); a count of the shared server's clients could be met by
    # other tests' connections while a process is still importing, and SIGTERM then killed it
    # before it logged anything
    names = [f"{queue.name}-d{i}" for i in range(2)]
    processes = [_start_cli_dispatcher(f"{url}?client_name={name}", queue.name)
                 for name in names]
    try:
        assert wait_until(lambda: set(names) <= {c["name"] for c in queue.client.client_list()},
                          timeout=60)
        rng = random.Random(11)
        results = queue.enqueue_many(
            sd.JobSpec("t", {"i": i}, id=f"m{i}", delay=rng.uniform(0.3, 2.5)) for i in range(n))
        due = {r.id: r.due for r in results}

        async def compete() -> list[int]:
            dispatchers = [sd.Dispatcher(queue.config, batch=rng.choice([7, 50, 150]))
                           for _ in range(4)]
            tasks = [asyncio.create_task(d.run()) for d in dispatchers]
            while queue.client.zcard(keys.delayed) or queue.client.xlen(keys.stream("t")) < n:
                await asyncio.sleep(0.05)
            for d in dispatchers:
                d.stop()
            await asyncio.gather(*tasks)
            for d in dispatchers:
                await d.close()
            return [d.promoted for d in dispatchers]

        in_loop = asyncio.run(asyncio.wait_for(compete(), 45))
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        logs = [process.communicate(timeout=20)[1] for process in processes]
    by_processes = []
    for log in logs:
        found = re.findall(r"promoted (\d+) job", log)
        assert found, log
        by_processes.append(int(found[-1]))
    assert sum(in_loop) + sum(by_processes) == n
    entries = stream_entries(queue.client, keys, "t")
    assert len(entries) == n and {job_id for _, job_id, _ in entries} == set(due)
    assert all(entry_ms >= job_due == due[job_id] for entry_ms, job_id, job_due in entries)
    assert queue.client.hget(keys.counts, "t") == b"0"
    print(f"promoted per dispatcher: in-loop {in_loop}, processes {by_processes}")


def test_a_crashed_partition_loop_is_restarted(redis_url: str, queue_name: str) -> None:
    """A partition whose promote call fails with a non-connection error recovers by itself."""
    q = sd.Queue(queue_name, url=redis_url, partitions=2)
    broken = PartitionKeys(q.name, 0)
    ids = {p: [i for i in (f"j{n}" for n in range(200)) if partition_of(i, 2) == p][:20]
           for p in (0, 1)}

    async def scenario() -> tuple[int, bool]:
        dispatcher = sd.Dispatcher(q.config, safety_tick=0.5)
        q.enqueue("t", 0, id="first", delay=0)  # creates the meta key before the breakage
        q.client.delete(broken.delayed)
        q.client.set(broken.delayed, "not a sorted set")  # promoteDue fails with WRONGTYPE
        running = asyncio.create_task(dispatcher.run())
        q.enqueue_many(sd.JobSpec("t", 1, id=i) for i in ids[1])
        await asyncio.sleep(1.0)
        survived = not running.done()
        q.client.delete(broken.delayed)
        q.enqueue_many(sd.JobSpec("t", 0, id=i) for i in ids[0])
        for _ in range(200):
            if q.client.xlen(broken.stream("t")) >= len(ids[0]):
                break
            await asyncio.sleep(0.05)
        dispatcher.stop()
        await running
        await dispatcher.close()
        return q.client.xlen(broken.stream("t")), survived

    promoted_on_broken, survived = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert survived
    assert promoted_on_broken == len(ids[0])
    assert q.client.xlen(PartitionKeys(q.name, 1).stream("t")) >= len(ids[1])
    q.close()
