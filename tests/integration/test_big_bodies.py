"""Big bodies: every ``enqueueJobs`` and ``ackJobs`` call is bounded by bytes as well as by count.

The server's own SLOWLOG (every call logged) shows how many jobs each call carried. Both faces
are checked: ``enqueue_many`` (sync and async) and the coalesced rounds of ``AsyncQueue.enqueue``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.scripts import script
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(120)
BUDGET = 1 << 20  # about 1 MiB of job data per script call (docs/producer.md)
BODY = 64 * 1024
HEAD_ARGS = 3 + 6 + 3  # EVALSHA sha numkeys, six keys, tolerance, keep_done, options flag
PER_JOB = 8
# flag '2' (docs/keys.md#enqueue-from-another-language): topic, when_kind, ttr and max_attempts
# once, then 3 values per job
SHARED_HEAD_ARGS, SHARED_PER_JOB = HEAD_ARGS + 4, 3


@pytest.fixture
def logged() -> Iterator[RedisServer]:
    """A private redis-server whose SLOWLOG keeps every call."""
    with RedisServer() as server:
        client = server.client()
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 100_000)
        client.close()
        yield server


def jobs_per_enqueue_call(url: str) -> list[int]:
    """How many jobs each ``enqueueJobs`` call logged in SLOWLOG carried, oldest first."""
    return jobs_per_call(url, "enqueueJobs", HEAD_ARGS, PER_JOB)


def jobs_per_call(url: str, name: str, head_args: int, per_job: int) -> list[int]:
    """How many jobs each call of script ``name`` logged in SLOWLOG carried, oldest first."""
    raw = redis.Redis.from_url(url)
    raw.response_callbacks.pop("SLOWLOG GET", None)  # the entries as Redis sends them
    try:
        entries = raw.execute_command("SLOWLOG", "GET", "-1")
    finally:
        raw.close()
    sha = script(name).sha.encode()
    counts = []
    for entry in reversed(entries):
        args = entry[3]
        if args[0].upper() != b"EVALSHA" or args[1] != sha:
            continue
        argc = len(args)
        if argc == 32 and args[-1].startswith(b"... ("):  # "... (N more arguments)"
            argc = 31 + int(args[-1].split(b"(")[1].split()[0])
        if name == "enqueueJobs" and args[head_args - 1] == b"2":
            counts.append((argc - SHARED_HEAD_ARGS) // SHARED_PER_JOB)
        else:
            counts.append((argc - head_args) // per_job)
    return counts


def assert_bounded(counts: list[int], job_bytes: int, jobs: int) -> None:
    """Every call carried one job, or jobs of at most ``BUDGET`` bytes in all; none lost."""
    assert sum(counts) == jobs, counts
    assert all(n == 1 or n * job_bytes <= BUDGET for n in counts), counts


def many(face: str, url: str, name: str, specs: list[sd.JobSpec]) -> list[sd.EnqueueResult]:
    """``enqueue_many`` on the sync or the async face, SLOWLOG emptied after a warm-up call."""
    reset = redis.Redis.from_url(url)
    if face == "sync":
        with sd.Queue(name, url=url) as queue:
            queue.enqueue_many([sd.JobSpec("t", b"warm", id="warm")])  # enqueueJobs loaded
            reset.slowlog_reset()
            return queue.enqueue_many(specs)

    async def run() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(name, url=url) as queue:
            await queue.enqueue_many([sd.JobSpec("t", b"warm", id="warm")])  # enqueueJobs loaded
            reset.slowlog_reset()
            return await queue.enqueue_many(specs)

    return asyncio.run(run())


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("body_bytes", [BODY, 1 << 20])
def test_enqueue_many_calls_are_bounded_by_bytes(
    logged: RedisServer, face: str, body_bytes: int
) -> None:
    client = logged.client()
    n = 40 if body_bytes == BODY else 3
    specs = [sd.JobSpec("t", bytes([65 + i % 26]) * body_bytes, id=f"big{i}", delay=600)
             for i in range(n)]
    results = many(face, logged.url, "bigq", specs)
    assert [r.id for r in results] == [s.id for s in specs]
    assert all(r.created for r in results)
    assert_bounded(jobs_per_enqueue_call(logged.url), body_bytes, n)
    with sd.Queue("bigq", url=logged.url) as queue:
        info = queue.get(f"big{n - 1}")
        assert info is not None and info.body == bytes([65 + (n - 1) % 26]) * body_bytes
    client.close()


def test_coalesced_rounds_are_bounded_by_bytes(logged: RedisServer) -> None:
    client = logged.client()
    n = 50

    async def run() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue("bigc", url=logged.url) as queue:
            await queue.enqueue_many([sd.JobSpec("t", b"warm", id="warm")])  # enqueueJobs loaded
            client.slowlog_reset()
            return await asyncio.gather(*(queue.enqueue("t", b"x" * BODY, id=f"c{i}")
                                          for i in range(n)))

    results: list[Any] = asyncio.run(run())
    assert [r.id for r in results] == [f"c{i}" for i in range(n)]
    assert_bounded(jobs_per_enqueue_call(logged.url), BODY, n)
    client.close()


def filled_up(server: RedisServer) -> None:
    """Let the server take about 3 MiB more data, then refuse writes (out of memory)."""
    client = server.client()
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used + (3 << 20))
    client.close()


def assert_each_job_told(outcomes: list[Any], url: str, name: str) -> None:
    """Jobs reported written are in Redis, the others are not; both kinds occur."""
    with sd.Queue(name, url=url) as queue:
        for index, outcome in enumerate(outcomes):
            stored = queue.get(f"p{index}")
            if isinstance(outcome, sd.EnqueueResult):
                assert outcome.created and outcome.id == f"p{index}" and stored is not None
            else:
                assert isinstance(outcome, sd.StreamdelayError), outcome
                assert "maxmemory" in str(outcome) and stored is None, (index, outcome)
    kinds = [isinstance(o, sd.EnqueueResult) for o in outcomes]
    assert kinds[0] and not kinds[-1], kinds


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_partly_failed_enqueue_many_says_per_job_what_happened(
    own_redis: RedisServer, face: str
) -> None:
    n = 100  # ~6.4 MiB: seven calls, of which the server takes about three
    specs = [sd.JobSpec("t", b"y" * BODY, id=f"p{i}", delay=600) for i in range(n)]
    many(face, own_redis.url, "full", [sd.JobSpec("t", b"w", id="warm-up")])
    filled_up(own_redis)
    with pytest.raises(sd.PartialEnqueueError) as caught:
        many(face, own_redis.url, "full", specs)
    error = caught.value
    assert len(error.outcomes) == n
    assert [r.id for r in error.written] == [s.id for s in specs[:len(error.written)]]
    assert [i for i, _ in error.failed] == list(range(len(error.written), n))
    assert str(error).startswith(f"enqueue: {len(error.written)} of {n} jobs written")
    assert_each_job_told(error.outcomes, own_redis.url, "full")


def test_coalesced_callers_of_a_partly_failed_round_get_their_own_outcome(
    own_redis: RedisServer
) -> None:
    n = 100

    async def run() -> list[Any]:
        async with sd.AsyncQueue("fullc", url=own_redis.url) as queue:
            await queue.enqueue("t", b"warm", id="warm")
            filled_up(own_redis)
            return await asyncio.gather(*(queue.enqueue("t", b"z" * BODY, id=f"p{i}")
                                          for i in range(n)), return_exceptions=True)

    assert_each_job_told(asyncio.run(run()), own_redis.url, "fullc")


def test_ack_calls_are_bounded_by_the_bytes_of_their_records(logged: RedisServer) -> None:
    """``ackJobs`` reads and frees each record: a batch of big jobs is cut at about 1 MiB."""
    n, body = 24, 200 * 1024
    queue = sd.Queue("biga", url=logged.url)
    queue.enqueue_many([sd.JobSpec("t", b"a" * body, id=f"a{i}") for i in range(n)])
    worker = sd.Worker(queue, concurrency=n)
    started = 0
    all_started = asyncio.Event()

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:  # every handler returns at once: one ack burst
        nonlocal started
        started += 1
        if started == n:
            all_started.set()
        await all_started.wait()

    client = logged.client()
    client.script_load(script("ackJobs").source)  # no NOSCRIPT round in the log
    client.slowlog_reset()
    worker.run(until_idle=True)
    counts = jobs_per_call(logged.url, "ackJobs", 3 + 6 + 3 + 1, 3)  # R: no read times
    assert sum(counts) == n, counts
    assert all(c == 1 or c * body <= BUDGET for c in counts), counts
    assert queue.stats().total.reserved == 0
    client.close()
