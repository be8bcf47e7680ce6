"""Coalesced ``AsyncQueue.enqueue``: concurrent calls share ``enqueueJobs`` round trips, yet each
caller gets exactly its own result or its own error (streamdelay/client/coalesce.py).

Everything runs against real redis-server processes; "how many script calls" is read from the
server's own INFO commandstats.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.client.enqueuing import ENQUEUE_BATCH
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.support.redis_server import RedisServer

FAR = 10_000_000_000.0  # an absolute `at` (epoch seconds) far in the future


def script_calls(client: redis.Redis) -> int:
    """How many EVALSHA calls the server has run since its stats were reset."""
    stats: dict[str, Any] = client.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


def server_ms(client: redis.Redis) -> int:
    """The server clock, epoch ms."""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def stored_due(client: redis.Redis, queue: str, partitions: int, job_id: str) -> int | None:
    """The due time of a job as the delayed set of its partition holds it."""
    keys = PartitionKeys(queue, partition_of(job_id, partitions))
    score = client.zscore(keys.delayed, job_id)
    return None if score is None else int(score)


def run(body: Callable[[], Awaitable[Any]], timeout: float = 60) -> Any:
    """Run an async test body with a hard time limit (a hung caller fails the test)."""
    return asyncio.run(asyncio.wait_for(body(), timeout))


async def warmed(name: str, url: str, **options: Any) -> sd.AsyncQueue:
    """An AsyncQueue whose scripts are loaded and partitions agreed (one enqueue done, and one
    enqueue_many: a caller alone uses the one-job script, a burst enqueueJobs, and one that
    replaces enqueueJobs)."""
    queue = sd.AsyncQueue(name, url=url, **options)
    await queue.enqueue("warm", None, delay=3600, id="warm-up")
    await queue.enqueue_many([sd.JobSpec("warm", None, delay=3600, id="warm-up")])
    await queue.enqueue_many([sd.JobSpec("warm", None, delay=3600, id="warm-up", replace=True)])
    return queue


def test_many_concurrent_callers_get_their_own_results(
    own_redis: RedisServer, queue_name: str
) -> None:
    client = own_redis.client()
    n = 150

    async def body() -> tuple[list[sd.EnqueueResult], int, int, int]:
        queue = await warmed(queue_name, own_redis.url)
        client.config_resetstat()
        before = server_ms(client)

        async def one(i: int) -> sd.EnqueueResult:
            if i % 2:  # exact due times: absolute, one second apart
                return await queue.enqueue("t", {"n": i}, at=FAR + i, id=f"job-{i}")
            return await queue.enqueue("t", {"n": i}, delay=100 + i, id=f"job-{i}")

        results = await asyncio.gather(*(one(i) for i in range(n)))
        after = server_ms(client)
        calls = script_calls(client)
        await queue.close()
        return results, before, after, calls

    results, before, after, calls = run(body)
    assert [r.id for r in results] == [f"job-{i}" for i in range(n)]
    assert all(r.created and r.state == "delayed" for r in results)
    for i, result in enumerate(results):
        if i % 2:
            assert result.due == int((FAR + i) * 1000)
        else:
            assert before + (100 + i) * 1000 <= result.due <= after + (100 + i) * 1000
        assert stored_due(client, queue_name, 1, result.id) == result.due
    assert calls <= 4, f"{n} concurrent callers took {calls} script calls: not coalesced"
    with sd.Queue(queue_name, url=own_redis.url) as sync_queue:
        info = sync_queue.get("job-7")
        assert info is not None and info.body == {"n": 7} and info.due == results[7].due


def test_a_lone_caller_is_sent_at_once(own_redis: RedisServer, queue_name: str) -> None:
    client = own_redis.client()

    async def body() -> int:
        queue = await warmed(queue_name, own_redis.url)
        client.config_resetstat()
        for i in range(5):  # one after the other: one round each, nothing waits for company
            result = await queue.enqueue("t", i, delay=60, id=f"solo-{i}")
            assert result.created
            assert script_calls(client) == i + 1
        await queue.close()
        return script_calls(client)

    assert run(body) == 5


def test_invalid_calls_raise_their_own_error_and_valid_ones_land(
    redis_url: str, queue_name: str
) -> None:
    bad: dict[str, dict[str, Any]] = {
        "topic": {"topic": ""},
        "delay": {"delay": -1},
        "id": {"id": "x" * 10_000},
        "ttr": {"ttr": 0},
        "max_attempts": {"max_attempts": 0},
        "headers": {"headers": {"k": 5}},
        "body": {"body": object()},
    }

    async def body() -> list[Any]:
        queue = sd.AsyncQueue(queue_name, url=redis_url)

        async def call(i: int) -> Any:
            field = list(bad)[i % len(bad)] if i % 3 == 0 else None
            kwargs: dict[str, Any] = {"topic": "t", "body": i, "delay": 60, "id": f"v{i}"}
            if field is not None:
                kwargs.update(bad[field])
            if i == 10:  # refused by the script (server clock), not by pure validation
                kwargs.pop("delay")
                kwargs["at"] = 1.0
            return await queue.enqueue(kwargs.pop("topic"), kwargs.pop("body"), **kwargs)

        outcomes = await asyncio.gather(*(call(i) for i in range(60)), return_exceptions=True)
        await queue.close()
        return outcomes

    outcomes = run(body)
    client = redis.Redis.from_url(redis_url)
    for i, outcome in enumerate(outcomes):
        if i % 3 == 0:
            field = list(bad)[i % len(bad)]
            assert isinstance(outcome, sd.ValidationError), (i, outcome)
            assert outcome.field == field, (i, outcome)
        elif i == 10:
            assert isinstance(outcome, sd.ValidationError) and outcome.field == "at", outcome
            assert outcome.job_id == "v10"
            assert stored_due(client, queue_name, 1, "v10") is None
        else:
            assert isinstance(outcome, sd.EnqueueResult) and outcome.id == f"v{i}", outcome
            assert stored_due(client, queue_name, 1, f"v{i}") == outcome.due


@pytest.mark.parametrize("replace", [False, True])
def test_duplicate_ids_in_one_burst_behave_as_one_after_another(
    own_redis: RedisServer, queue_name: str, replace: bool
) -> None:
    client = own_redis.client()
    dues = [FAR + 50 - 7 * i for i in range(12)]  # all different, not sorted

    async def body() -> tuple[list[sd.EnqueueResult], list[sd.EnqueueResult], int]:
        queue = await warmed(queue_name, own_redis.url)
        client.config_resetstat()
        burst = await asyncio.gather(*(
            queue.enqueue("t", {"n": i}, at=due, id="same", replace=replace)
            for i, due in enumerate(dues)))
        calls = script_calls(client)
        one_by_one = [await queue.enqueue("t", {"n": i}, at=due, id="other", replace=replace)
                      for i, due in enumerate(dues)]
        await queue.close()
        return burst, one_by_one, calls

    burst, one_by_one, calls = run(body)
    assert calls == 1  # the whole burst was one enqueueJobs call
    pattern = [(r.created, r.due, r.state) for r in burst]
    assert pattern == [(r.created, r.due, r.state) for r in one_by_one]
    assert [r.created for r in burst] == [True] + [False] * (len(dues) - 1)
    last = -1 if replace else 0
    assert all(r.id == "same" for r in burst)
    assert stored_due(client, queue_name, 1, "same") == int(dues[last] * 1000)
    assert client.zcard(PartitionKeys(queue_name, 0).delayed) == 3  # warm-up, same, other
    with sd.Queue(queue_name, url=own_redis.url) as sync_queue:
        for job_id in ("same", "other"):
            info = sync_queue.get(job_id)
            assert info is not None and info.body == {"n": len(dues) - 1 if replace else 0}
        assert sync_queue.stats().topics["t"].delayed == 2


def test_more_callers_than_one_call_holds(own_redis: RedisServer, queue_name: str) -> None:
    """A round bigger than ENQUEUE_BATCH: several bounded calls in one pipeline, one past `at`
    among them refused alone (checked against the server clock first), a repeated id in two
    different calls still seen in order."""
    client = own_redis.client()
    n = 3 * ENQUEUE_BATCH + 7

    async def body() -> tuple[list[Any], int]:
        queue = await warmed(queue_name, own_redis.url)
        client.config_resetstat()

        async def one(i: int) -> sd.EnqueueResult:
            if i == 200:
                return await queue.enqueue("t", i, at=1.0, id="too-late")
            job_id = "twice" if i in (5, n - 5) else f"m{i}"
            return await queue.enqueue("t", i, at=FAR + i, id=job_id)

        outcomes = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
        calls = script_calls(client)
        await queue.close()
        return outcomes, calls

    outcomes, calls = run(body)
    refused = outcomes[200]
    assert isinstance(refused, sd.ValidationError) and refused.field == "at"
    assert stored_due(client, queue_name, 1, "too-late") is None
    assert outcomes[5].created and not outcomes[n - 5].created
    assert outcomes[n - 5].due == int((FAR + 5) * 1000)
    for i, outcome in enumerate(outcomes):
        if i not in (5, n - 5, 200):
            assert outcome.created and outcome.due == int((FAR + i) * 1000), (i, outcome)
            assert stored_due(client, queue_name, 1, f"m{i}") == outcome.due
    assert calls <= 2 * -(-n // ENQUEUE_BATCH), calls


def test_partitions_coalesce_each_on_its_own(own_redis: RedisServer, queue_name: str) -> None:
    client = own_redis.client()
    n = 400

    async def body() -> tuple[list[sd.EnqueueResult], int]:
        queue = await warmed(queue_name, own_redis.url, partitions=4)
        client.config_resetstat()
        results = await asyncio.gather(*(
            queue.enqueue("t", i, at=FAR + i, id=f"p{i}") for i in range(n)))
        calls = script_calls(client)
        await queue.close()
        return results, calls

    results, calls = run(body)
    parts = {partition_of(f"p{i}", 4) for i in range(n)}
    assert parts == {0, 1, 2, 3}
    for i, result in enumerate(results):
        assert result.id == f"p{i}" and result.created and result.due == int((FAR + i) * 1000)
        assert stored_due(client, queue_name, 4, result.id) == result.due
    assert calls <= 4 * 2 * -(-n // 4 // ENQUEUE_BATCH), calls
    with sd.Queue(queue_name, url=own_redis.url, partitions=4) as sync_queue:
        assert sync_queue.stats().topics["t"].delayed == n


def test_a_cancelled_caller_does_not_break_the_others(
    redis_url: str, queue_name: str
) -> None:
    client = redis.Redis.from_url(redis_url)

    async def body() -> list[Any]:
        queue = await warmed(queue_name, redis_url)
        tasks = [asyncio.create_task(queue.enqueue("t", i, delay=60, id=f"c{i}"))
                 for i in range(40)]
        await asyncio.sleep(0)  # every caller is waiting now; the round is not sent yet
        for task in tasks[10:15]:
            task.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        later = await queue.enqueue("t", "later", delay=60, id="after-cancel")
        assert later.created
        await queue.close()
        return outcomes

    outcomes = run(body)
    for i, outcome in enumerate(outcomes):
        if 10 <= i < 15:
            assert isinstance(outcome, asyncio.CancelledError)
            assert stored_due(client, queue_name, 1, f"c{i}") is None  # left out of the round
        else:
            assert isinstance(outcome, sd.EnqueueResult) and outcome.id == f"c{i}"
            assert stored_due(client, queue_name, 1, f"c{i}") == outcome.due


def test_redis_killed_mid_burst(durable_redis: RedisServer, queue_name: str) -> None:
    """Redis (appendfsync always) is SIGKILLed while 50 callers enqueue in a loop: every caller
    ends (success or ConnectionFailed, none hangs) and every success is in Redis after restart."""
    succeeded: dict[str, int] = {}
    failures: list[BaseException] = []

    async def caller(queue: sd.AsyncQueue, c: int, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            job_id = f"k{c}-{i}"
            i += 1
            try:
                result = await queue.enqueue("t", i, delay=3600, id=job_id)
            except sd.StreamdelayError as exc:
                failures.append(exc)
                return
            assert result.id == job_id
            succeeded[job_id] = result.due

    async def body() -> None:
        queue = await warmed(queue_name, durable_redis.url, retry_for=1.0)
        stop = asyncio.Event()
        callers = [asyncio.create_task(caller(queue, c, stop)) for c in range(50)]
        while len(succeeded) < 500:
            await asyncio.sleep(0.005)
        await asyncio.to_thread(durable_redis.kill)
        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*callers), 30)  # nobody hangs
        assert time.monotonic() - began < 20
        stop.set()
        await queue.close()

    run(body)
    assert len(failures) == 50  # Redis stayed down: every caller's next round failed
    assert all(isinstance(exc, sd.ConnectionFailed) for exc in failures), failures[:3]
    durable_redis.start()
    client = durable_redis.client()
    missing = [j for j, due in succeeded.items() if stored_due(client, queue_name, 1, j) != due]
    assert not missing, f"{len(missing)} acknowledged jobs lost, e.g. {missing[:3]}"


def test_redis_restarted_within_retry_for(durable_redis: RedisServer, queue_name: str) -> None:
    """Killed and back within ``retry_for``: the waiting rounds are retried and succeed."""
    async def body() -> list[sd.EnqueueResult]:
        queue = await warmed(queue_name, durable_redis.url, retry_for=30.0)
        durable_redis.kill()
        burst = asyncio.gather(*(queue.enqueue("t", i, delay=3600, id=f"r{i}")
                                 for i in range(100)))
        await asyncio.sleep(0.3)
        await asyncio.to_thread(durable_redis.start)
        results = await asyncio.wait_for(burst, 40)
        await queue.close()
        return list(results)

    results = run(body, timeout=90)
    client = durable_redis.client()
    assert [r.id for r in results] == [f"r{i}" for i in range(100)]
    for result in results:
        assert stored_due(client, queue_name, 1, result.id) == result.due


def test_close_waits_for_the_round_in_flight(redis_url: str, queue_name: str) -> None:
    client = redis.Redis.from_url(redis_url)

    async def body() -> list[sd.EnqueueResult]:
        queue = await warmed(queue_name, redis_url)
        tasks = [asyncio.create_task(queue.enqueue("t", i, delay=60, id=f"w{i}"))
                 for i in range(30)]
        await asyncio.sleep(0)  # all queued, their round about to go out
        await queue.close()
        assert all(task.done() for task in tasks)
        return [task.result() for task in tasks]

    for i, result in enumerate(run(body)):
        assert result.id == f"w{i}" and stored_due(client, queue_name, 1, result.id) == result.due


def test_a_server_error_fails_each_caller_of_the_round(
    own_redis: RedisServer, queue_name: str
) -> None:
    """Redis refuses the writes (maxmemory reached): every caller of the round gets the error,
    each its own exception object; once Redis accepts writes again the queue works."""
    client = own_redis.client()

    async def body() -> tuple[list[Any], sd.EnqueueResult]:
        queue = await warmed(queue_name, own_redis.url)
        client.config_set("maxmemory", 1)
        try:
            outcomes = await asyncio.gather(*(queue.enqueue("t", i, delay=60, id=f"o{i}")
                                              for i in range(20)), return_exceptions=True)
        finally:
            client.config_set("maxmemory", 0)
        after = await queue.enqueue("t", "after", delay=60, id="after-oom")
        await queue.close()
        return outcomes, after

    outcomes, after = run(body)
    assert all(isinstance(o, sd.StreamdelayError) for o in outcomes), outcomes[:3]
    assert "maxmemory" in str(outcomes[0])
    assert len({id(o) for o in outcomes}) == len(outcomes)
    assert {type(o) for o in outcomes} == {type(outcomes[0])}
    assert after.created and stored_due(client, queue_name, 1, "after-oom") == after.due
    assert all(stored_due(client, queue_name, 1, f"o{i}") is None for i in range(20))
