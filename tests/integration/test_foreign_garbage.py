"""Garbage written straight into a queue's keys by a foreign client (plain redis-py).

Each kind of garbage is quarantined (a dead-letter entry with the reason, or a dangling index
entry dropped with a log line); the worker neither crashes nor spins, and good jobs keep flowing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.codec import encode_blob
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.redis_server import RedisServer

GOOD_JOBS = 12
SERVE_LIMIT = 60.0


@pytest.fixture
def foreign(redis_url: str) -> Iterator[redis.Redis]:
    """A plain redis-py client, as another program would use."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def keys_of(queue: sd.Queue) -> PartitionKeys:
    """The keys of the (single) partition of ``queue``."""
    return PartitionKeys(queue.name, 0)


def blob(body: bytes = b'{"ok":true}') -> bytes:
    """A well-formed producer blob (JSON body)."""
    return encode_blob("j", body, {}, None)


def record(state: str, topic: str, entry: str = "", body: bytes = b'{"ok":true}',
           due: int = 0, max_attempts: int = 3) -> bytes:
    """A job record in the layout of docs/design.md."""
    return f"{state}|0|{due}|{due}|60000|{max_attempts}|{entry}|{topic}|".encode() + blob(body)


def enqueue_good(queue: sd.Queue, topic: str = "t") -> list[str]:
    """Good jobs due now, interleaved with whatever garbage is there."""
    results = queue.enqueue_many([sd.JobSpec(topic, {"n": i}, id=f"good-{topic}-{i}")
                                  for i in range(GOOD_JOBS)])
    return [r.id for r in results]


def serve(queue: sd.Queue, topics: tuple[str, ...] = ("t",), *, until_idle: bool = True,
          seconds: float | None = None) -> tuple[sd.Worker, list[str]]:
    """Run a worker for ``topics`` until idle (or for ``seconds``); returns it and handled ids."""
    worker = sd.Worker(queue, reclaim_interval=0.2, block=0.2)
    handled: list[str] = []
    for topic in topics:
        worker.handler(topic)(lambda job: handled.append(job.id))

    async def main() -> None:
        if seconds is not None:
            asyncio.get_running_loop().call_later(seconds, worker.stop)
        await asyncio.wait_for(worker.serve(until_idle=until_idle), SERVE_LIMIT)

    asyncio.run(main())
    return worker, handled


def warnings_of(caplog: pytest.LogCaptureFixture) -> str:
    """Every warning line logged by streamdelay."""
    return "\n".join(r.getMessage() for r in caplog.records
                     if r.name.startswith("streamdelay") and r.levelno >= logging.WARNING)


def test_malformed_record_is_left_out_and_removable(
    queue: sd.Queue, foreign: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    keys = keys_of(queue)
    good = enqueue_good(queue)
    foreign.hset(keys.jobs, mapping={"bad-1": b"garbage", "bad-2": b"s|x|y|" + b"\xff" * 10,
                                     "bad-3": b"d|0|0|0|60000|3||t|\xc1\xc1"})
    foreign.zadd(keys.delayed, {"bad-1": 0, "bad-2": 0})
    caplog.set_level(logging.WARNING, "streamdelay")
    _, handled = serve(queue)
    assert sorted(handled) == sorted(good)
    logged = warnings_of(caplog)
    assert "'bad-1' of queue" in logged and "malformed job record" in logged
    assert foreign.zcard(keys.delayed) == 0  # the index entries are gone: no spinning on them
    for job_id in ("bad-1", "bad-2", "bad-3"):
        with pytest.raises(sd.StreamdelayError) as caught:
            queue.get(job_id)
        assert caught.value.field == "id" and "malformed record" in str(caught.value)
        assert queue.cancel(job_id) is True
        assert queue.get(job_id) is None
    assert foreign.hlen(keys.jobs) == 0


def test_index_entry_without_job_is_dropped_with_a_log_line(
    queue: sd.Queue, foreign: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    keys = keys_of(queue)
    good = enqueue_good(queue)
    foreign.zadd(keys.delayed, {f"ghost-{i}": 0 for i in range(300)})  # more than one batch
    caplog.set_level(logging.WARNING, "streamdelay")
    _, handled = serve(queue)
    assert sorted(handled) == sorted(good)
    assert foreign.zcard(keys.delayed) == 0
    assert warnings_of(caplog).count("no job record") == 300


def test_job_without_index_entry_waits_until_rescheduled(
    queue: sd.Queue, foreign: redis.Redis
) -> None:
    keys = keys_of(queue)
    good = enqueue_good(queue)
    foreign.hset(keys.jobs, "orphan", record("d", "t"))  # no delayed-set entry: never due
    _, handled = serve(queue)
    assert sorted(handled) == sorted(good)
    info = queue.get("orphan")
    assert info is not None and info.state == "delayed" and info.body == {"ok": True}
    assert queue.reschedule("orphan", delay=0) is True  # the operator's repair
    _, handled = serve(queue)
    assert handled == ["orphan"]
    assert queue.get("orphan") is None


def test_garbage_stream_entries_are_dropped_and_a_corrupt_delivery_goes_dead(
    queue: sd.Queue, foreign: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    keys = keys_of(queue)
    stream = keys.stream("t")
    foreign.xadd(stream, {"foo": "bar"})
    foreign.xadd(stream, {"id": "no-rec"})
    foreign.xadd(stream, {"id": "not-a-record", "rec": "hello"})
    foreign.xadd(stream, {"id": b"\xff\xfe", "rec": record("s", "t")})
    foreign.xadd(stream, {"id": "not-msgpack", "rec": b"s|0|0|0|60000|3||t|\xc1\xc1\xc1"})
    # a real job whose delivered copy was overwritten with a blob that is not MessagePack
    entry = foreign.xadd(stream, {"id": "real", "rec": b"s|0|0|0|60000|3||t|\x93\xc1"}).decode()
    foreign.hset(keys.jobs, "real", record("s", "t", entry))
    good = enqueue_good(queue)
    caplog.set_level(logging.WARNING, "streamdelay")
    _, handled = serve(queue)
    assert sorted(handled) == sorted(good)
    logged = warnings_of(caplog)
    assert logged.count("dropped stream entry") == 5
    assert "without a job id" in logged and "malformed job blob" in logged
    assert foreign.xlen(stream) == 0  # nothing left in the stream ...
    assert foreign.xpending(stream, "workers")["pending"] == 0  # ... or in the pending list
    dead = queue.dead_list("t")
    assert [d.id for d in dead] == ["real"]
    assert "MessagePack" in dead[0].error or "malformed" in dead[0].error
    info = queue.get("real")
    assert info is not None and info.state == "dead"


def test_wrong_type_key_at_a_topic_stream(
    queue: sd.Queue, foreign: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    keys = keys_of(queue)
    foreign.set(keys.stream("u"), "not a stream")
    doomed = queue.enqueue("u", {"x": 1}, id="doomed").id
    good = enqueue_good(queue)
    caplog.set_level(logging.WARNING, "streamdelay")
    _, handled = serve(queue)  # serves "t" only: "u" jobs must not stop the dispatcher
    assert sorted(handled) == sorted(good)
    assert "is not a stream" in warnings_of(caplog)
    dead = queue.dead_list("u")
    assert [d.id for d in dead] == [doomed] and "WRONGTYPE" in dead[0].error
    stats = queue.stats()  # stats still answer
    assert stats.topics["u"].dead == 1 and stats.topics["t"].ready == 0
    with pytest.raises(sd.StreamdelayError, match="t:u holds a string"):
        serve(queue, ("u",))  # a worker for that topic refuses to start, loudly


def test_payload_limit_on_both_ends(queue_name: str, redis_url: str,
                                    foreign: redis.Redis) -> None:
    limit = 1024
    queue = sd.Queue(queue_name, url=redis_url, max_body_bytes=limit)
    with pytest.raises(sd.BodyEncodeError) as caught:
        queue.enqueue("t", b"x" * (limit + 1))
    assert caught.value.field == "body" and "over the limit" in str(caught.value)
    assert queue.enqueue("t", b"x" * limit, id="at-limit").created
    # a foreign producer calling the protocol script directly, with a body over the limit
    keys = keys_of(queue)
    huge = encode_blob("b", b"y" * (limit * 50), {}, None)
    source = script("enqueueJobs").source
    foreign.eval(source, 6, *keys.script_keys(), 3600000, 0, "0",
                 "huge", "t", "r", 0, 60000, 3, "0", huge)
    good = enqueue_good(queue)
    seen: list[tuple[str, int]] = []
    worker = sd.Worker(queue, reclaim_interval=0.2, block=0.2)

    @worker.handler("t")
    def handle(job: sd.Job) -> None:
        seen.append((job.id, len(job.body) if isinstance(job.body, bytes) else 0))

    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), SERVE_LIMIT))
    assert sorted(i for i, _ in seen) == sorted([*good, "at-limit"])
    dead = queue.dead_list("t")
    assert [d.id for d in dead] == ["huge"]
    assert f"{limit * 50} bytes is over the limit of {limit}" in dead[0].error
    queue.close()


def test_idle_worker_does_not_spin_after_garbage(caplog: pytest.LogCaptureFixture) -> None:
    with RedisServer() as server:
        queue = sd.Queue("spin", url=server.url)
        plain = server.client()
        keys = keys_of(queue)
        plain.hset(keys.jobs, "bad", b"garbage")
        plain.zadd(keys.delayed, {"bad": 0, "ghost": 0})
        plain.xadd(keys.stream("t"), {"junk": "1"})
        plain.set(keys.stream("u"), "x")
        queue.enqueue("u", 1)
        good = enqueue_good(queue)
        _, handled = serve(queue)
        assert sorted(handled) == sorted(good)
        plain.config_resetstat()
        serve(queue, until_idle=False, seconds=2.0)  # idle, with all that garbage still around
        calls = plain.info("commandstats")
        scripts_run = calls.get("cmdstat_evalsha", {}).get("calls", 0)
        reads = calls.get("cmdstat_xreadgroup", {}).get("calls", 0)
        # an idle worker: a reclaim pass every 0.2 s, a blocking read every 0.2 s, a few
        # dispatcher wake-ups; a spinning one makes thousands of calls in 2 s
        assert scripts_run < 100 and reads < 60, calls
        queue.close()
