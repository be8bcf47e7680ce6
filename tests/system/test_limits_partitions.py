"""Topic limits on a queue of several partitions (docs/limits.md#more-than-one-partition): the
limit's state lives in partition 0's slot, a take on another partition leases there first, and
every settle frees its lease there. Held by real ``streamdelay worker`` processes
(tests/support/apps/limit_worker_app.py) and ``reserve`` together on 3 partitions, after a
``kill -9`` of a worker holding leases on two partitions, and on a real 3-primary cluster."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.integration.test_pull import running_dispatcher
from tests.support.cluster import LocalCluster, spread_queue_name
from tests.support.redis_server import RedisServer
from tests.support.runs import overlaps, peaks, runs, server_us
from tests.support.web_server import WebServer
from tests.system.test_limits import Fleet, starts, wait_for

pytestmark = pytest.mark.timeout(150)
P = 3
_PEAK = """local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n"""


def ids_on(partition: int, count: int, prefix: str) -> list[str]:
    """``count`` job ids that land on ``partition`` of a queue of ``P`` partitions."""
    found: list[str] = []
    n = 0
    while len(found) < count:
        if partition_of(f"{prefix}{n}", P) == partition:
            found.append(f"{prefix}{n}")
        n += 1
    return found


def leases(client: redis.Redis, queue: str, topic: str) -> list[str]:
    """The lease members of ``topic`` (partition 0's slot)."""
    return [m.decode() for m in client.zrange(PartitionKeys(queue, 0).leases(topic), 0, -1)]


@pytest.fixture
def fleet3(redis_url: str, queue_name: str, tmp_path: Path) -> Iterator[Fleet]:
    """Worker processes on a queue of 3 partitions (stopped at the end)."""
    f = Fleet(redis_url, queue_name, tmp_path / "starts.txt", 0.0)
    f.env["LIMIT_APP_PARTITIONS"] = str(P)
    try:
        yield f
    finally:
        f.stop()


def test_reserve_leases_in_partition_0_and_every_settle_frees_there(redis_url: str,
                                                                     queue_name: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with sd.Queue(queue_name, url=redis_url, partitions=P) as q, running_dispatcher(q):
        assert q.limit("t", concurrency=2)  # no longer refused on P > 1
        q.enqueue_many([sd.JobSpec("t", i, id=i) for i in ids_on(1, 4, "a") + ids_on(2, 4, "b")])
        wait_for(lambda: q.stats().topics["t"].ready == 8, 10, "the jobs to be ready")
        got = q.reserve("t", count=10, wait=2)
        assert len(got) == 2  # the limit, over every partition
        assert q.reserve("t", count=10, wait=0.2) == []
        assert q.stats().topics["t"].leases == 2
        members = leases(client, queue_name, "t")
        assert sorted(m.split(":")[0] for m in members) in (["1", "1"], ["1", "2"], ["2", "2"])
        for r in got:  # a heartbeat moves the lease on in slot 0 too
            r.touch()
        assert leases(client, queue_name, "t") == members
        got[0].ack()
        got[1].release()  # a hand-back frees its lease as well
        assert leases(client, queue_name, "t") == []
        again = q.reserve("t", count=10, wait=2)
        assert len(again) == 2
        assert again[0].fail("boom", retry_delay=60) == "retried"
        q.reservation(again[1].receipt).ack()  # a receipt rebuilt elsewhere frees it too
        assert leases(client, queue_name, "t") == []
        assert not client.keys(f"sd:{{{queue_name}#0}}:grant:*")  # every grant was named


def run_with_a_reserver(fleet3: Fleet, client: redis.Redis, redis_url: str, queue_name: str,
                        jobs: list[str], tmp_path: Path) -> None:
    """A reserving consumer joins the two worker processes the test started (same group) on
    ``jobs`` of topic ``limited``; then each ran once, every consumer took some, and the peak of
    handlers at once is exactly the limit of 3."""
    peak = client.register_script(_PEAK)
    reserved: list[str] = []
    stop = threading.Event()

    def reserve_loop() -> None:
        with sd.Queue(queue_name, url=redis_url, partitions=P) as mine:
            while not stop.is_set():
                for r in mine.reserve("limited", group="limit-app", wait=0.3, count=2):
                    peak(keys=[f"{queue_name}:running", f"{queue_name}:peak"])
                    reserved.append(r.id)
                    time.sleep(0.05)
                    client.decr(f"{queue_name}:running")
                    r.ack()

    thread = threading.Thread(target=reserve_loop)
    thread.start()
    out = tmp_path / "starts.txt"
    try:
        wait_for(lambda: len(starts(out)) + len(reserved) >= len(jobs), 90, "every job to run")
    finally:
        stop.set()
        thread.join(30)
    ran = [i for i, _, _ in starts(out)] + reserved
    assert sorted(ran) == sorted(jobs)  # every job once
    assert reserved and len({pid for _, _, pid in starts(out)}) == 2  # all three took jobs
    assert int(client.get(f"{queue_name}:peak") or 0) == 3  # reached, never passed


def test_concurrency_holds_across_two_workers_and_reserve_on_3_partitions(
        fleet3: Fleet, redis_url: str, queue_name: str, tmp_path: Path) -> None:
    """Two worker processes (16 slots each) and a reserving consumer share concurrency 3 of one
    topic over 3 partitions: never more than 3 handlers at once, every job once."""
    client = redis.Redis.from_url(redis_url)
    q = sd.Queue(queue_name, url=redis_url, partitions=P)
    q.limit("limited", concurrency=3)
    fleet3.env["LIMIT_APP_SLEEP"] = "0.05"
    fleet3.start(2)
    jobs = [f"j{i}" for i in range(90)]
    q.enqueue_many([sd.JobSpec("limited", i, id=i) for i in jobs])
    run_with_a_reserver(fleet3, client, redis_url, queue_name, jobs, tmp_path)
    wait_for(lambda: q.stats().topics["limited"].leases == 0, 10, "every lease freed")


def test_rate_holds_on_3_partitions(fleet3: Fleet, redis_url: str, queue_name: str,
                                    tmp_path: Path) -> None:
    """20/s over 6 s after the first burst of a full bucket, two worker processes taking from
    three partitions: one bucket in partition 0's slot."""
    q = sd.Queue(queue_name, url=redis_url, partitions=P)
    q.limit("limited", rate="20/s")
    fleet3.start(2)
    q.enqueue_many([sd.JobSpec("limited", i, id=f"j{i}") for i in range(400)])
    out = tmp_path / "starts.txt"
    wait_for(lambda: len(starts(out)) >= 1, 30, "the first start")
    first = min(t for _, t, _ in starts(out))
    window = (first + 2.0, first + 8.0)
    wait_for(lambda: time.time() > window[1] + 0.5, 30, "the window to pass")
    rows = starts(out)
    inside = [t for _, t, _ in rows if window[0] <= t < window[1]]
    assert len(inside) <= 20 * 6 + 2, f"{len(inside)} starts in 6 s at 20/s"  # never over
    assert len(inside) >= 20 * 6 * 0.6, f"{len(inside)} starts in 6 s at 20/s"  # and held to it
    assert len({i for i, _, _ in rows}) == len(rows)  # no job started twice
    assert {partition_of(i, P) for i, _, _ in rows} == {0, 1, 2}


def test_a_kill_of_a_worker_holding_leases_on_two_partitions(fleet3: Fleet, redis_url: str,
                                                             queue_name: str,
                                                             tmp_path: Path) -> None:
    """Its leases in partition 0's slot expire with the jobs' ttr; the jobs are reclaimed and
    run again later; nothing is lost and the limit is never passed (the runs compared on the
    server clock, tests/support/runs.py: the killed process's end at its kill)."""
    client = redis.Redis.from_url(redis_url)
    q = sd.Queue(queue_name, url=redis_url, partitions=P)
    q.limit("limited", concurrency=3)
    fleet3.env["LIMIT_APP_SLEEP"] = "0.03"
    out = tmp_path / "starts.txt"
    first = fleet3.start(1)[0]
    hang = ids_on(1, 2, "h") + ids_on(2, 1, "h")  # on partitions 1 and 2
    q.enqueue_many([sd.JobSpec("limited", "hang", id=i, ttr=5, max_attempts=3) for i in hang])
    wait_for(lambda: len(starts(out)) >= 3, 30, "the hanging jobs to start")
    assert sorted(m.split(":")[0] for m in leases(client, queue_name, "limited")) == [
        "1", "1", "2"]
    fleet3.start(1)
    jobs = [f"j{i}" for i in range(60)]
    q.enqueue_many([sd.JobSpec("limited", i, id=i) for i in jobs])
    time.sleep(1.0)  # the three leases are held: nothing else starts
    assert len(starts(out)) == 3
    first.send_signal(signal.SIGKILL)
    killed = {str(first.pid): server_us(client)}  # its runs end here
    first.wait(timeout=10)
    # the leases expire one ttr (5 s) after the last heartbeat: the others start then, and the
    # killed jobs, reclaimed after their ttr, run again (docs/limits.md#more-than-one-partition);
    # the second worker, just started, counts their silence from its first reclaim call on
    # (docs/reliability.md#outages-and-never-twice-at-once): on a loaded machine its start-up
    # alone takes seconds
    wait_for(lambda: {i for i, _, _ in starts(out)} >= {*jobs, *hang} and
             len([i for i, _, _ in starts(out) if i in hang]) == 6, 90,
             "the other jobs, and the killed ones again, to run")
    found = runs(client, f"{queue_name}:runs", killed)
    assert peaks(found) == {"limited": 3}, overlaps(found, 3)  # reached, never passed
    row = q.stats().topics["limited"]
    assert row.dead == 0
    wait_for(lambda: q.stats().topics["limited"].leases == 0 and not any(
        q.get(i) for i in [*jobs, *hang]), 20, "every job done and every lease freed")


def test_limits_on_a_3_primary_cluster() -> None:
    """Partition 0's slot and the others on different primaries: a Worker and a reserving
    consumer share concurrency 2; the leases named by partition come and go."""
    with LocalCluster(primaries=3) as cluster:
        name = spread_queue_name(cluster, P)
        node = cluster.owner_of(PartitionKeys(name, 0).limits)  # slot 0 of the queue
        client = redis.Redis(host="127.0.0.1", port=node.port)
        lock = threading.Lock()
        state = {"running": 0, "peak": 0}
        ran: list[str] = []
        prefixes: set[str] = set()

        def began(job_id: str) -> None:
            with lock:
                state["running"] += 1
                state["peak"] = max(state["peak"], state["running"])
                ran.append(job_id)
                prefixes.update(m.split(":")[0] for m in leases(client, name, "c"))

        def ended() -> None:
            with lock:
                state["running"] -= 1

        with sd.Queue(name, url=cluster.url, partitions=P) as q, running_dispatcher(q):
            q.limit("c", concurrency=2)
            jobs = [f"j{i}" for i in range(40)]
            q.enqueue_many([sd.JobSpec("c", i, id=i) for i in jobs])
            worker = sd.Worker(q, group="g", concurrency=8, dispatch=False)
            done = threading.Event()

            @worker.handler("c")
            async def handle(job: sd.Job) -> None:
                began(job.id)
                await asyncio.sleep(0.05)
                ended()

            async def serve() -> None:
                serving = asyncio.create_task(worker.serve())
                await asyncio.to_thread(done.wait, 90)
                worker.stop()
                await serving

            thread = threading.Thread(target=asyncio.run, args=(serve(),))
            thread.start()
            try:
                with sd.Queue(name, url=cluster.url, partitions=P) as mine:
                    deadline = time.monotonic() + 60
                    while len(ran) < len(jobs) and time.monotonic() < deadline:
                        for r in mine.reserve("c", group="g", wait=0.3, count=2):
                            began(r.id)
                            time.sleep(0.05)
                            ended()
                            r.ack()
                wait_for(lambda: q.stats().topics["c"].leases == 0, 10, "every lease freed")
            finally:
                done.set()
                thread.join(60)
            assert sorted(ran) == sorted(jobs)
            assert state["peak"] <= 2
            assert prefixes & {"1", "2"}  # leases of other partitions lived in slot 0


def test_http_reserve_obeys_a_limit_on_3_partitions(shared_redis: RedisServer) -> None:
    """Over HTTP: concurrency 1 over jobs of partitions 1 and 2; the ack frees the lease in
    partition 0's slot, and the next reserve gets the next job."""
    url = shared_redis.url
    client = redis.Redis.from_url(url)
    name = f"h{uuid.uuid4().hex[:10]}"
    with sd.Queue(name, url=url, partitions=P) as q, running_dispatcher(q):
        q.limit("t", concurrency=1)
        q.enqueue_many([sd.JobSpec("t", i, id=i) for i in ids_on(1, 2, "a") + ids_on(2, 2, "b")])
        wait_for(lambda: q.stats().topics["t"].ready == 4, 10, "the jobs to be ready")
    base = f"/v1/queues/{name}"
    with WebServer(url, [name], "--partitions", str(P)) as server:
        status, first = server.request("POST", f"{base}/topics/t:reserve",
                                       {"count": 5, "consumer": "h1"})
        assert status == 200 and len(first["deliveries"]) == 1
        assert [m.split(":")[0] for m in leases(client, name, "t")] in (["1"], ["2"])
        status, _ = server.request("POST", f"{base}/topics/t:reserve",
                                   {"count": 5, "consumer": "h2", "wait_ms": 400})
        assert status == 204
        receipt = first["deliveries"][0]["receipt"]
        assert server.request("POST", f"{base}/deliveries/{receipt}:ack")[0] == 200
        assert leases(client, name, "t") == []
        status, second = server.request("POST", f"{base}/topics/t:reserve",
                                        {"count": 5, "consumer": "h2", "wait_ms": 2000})
        assert status == 200 and len(second["deliveries"]) == 1


def test_a_staged_topic_holds_its_own_concurrency_on_3_partitions(
        fleet3: Fleet, redis_url: str, queue_name: str, tmp_path: Path) -> None:
    """A staged topic (fairness keys and priorities, docs/priorities.md) with concurrency 3 on
    3 partitions, taken by two worker processes (16 slots each) and a reserving consumer:
    the take of each partition p != 0 leases in partition 0's slot first, so never more than 3
    handlers at once, and every job runs once."""
    client = redis.Redis.from_url(redis_url)
    q = sd.Queue(queue_name, url=redis_url, partitions=P)
    q.limit("limited", concurrency=3)
    fleet3.env["LIMIT_APP_SLEEP"] = "0.05"
    keys = [f"tenant-{i}" for i in range(6)]
    specs = [sd.JobSpec("limited", i, id=f"k{i}", key=keys[i % len(keys)]) for i in range(60)]
    specs += [sd.JobSpec("limited", i, id=f"p{i}", priority=1 + i % 9) for i in range(30)]
    jobs = [j.id for j in q.enqueue_many(specs)]
    assert {partition_of(j, P) for j in jobs} == {0, 1, 2}  # a `{key}` id by its key
    fleet3.start(2)
    run_with_a_reserver(fleet3, client, redis_url, queue_name, jobs, tmp_path)
    assert q.stats().topics["limited"].staged
    wait_for(lambda: q.stats().topics["limited"].leases == 0, 10, "every lease freed")
    assert not client.keys(f"sd:{{{queue_name}#0}}:grant:*")  # every grant was named
    q.close()
