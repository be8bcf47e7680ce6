"""Bad input at every public entry point: a ``StreamdelayError`` naming the field, nothing written.

Each case runs on a queue name nobody has used, and afterwards no key of that queue exists and
the server's key count is unchanged (not even the partition-count record).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.unit.test_validation import assert_names

pytestmark = pytest.mark.timeout(60)
OK = sd.JobSpec("t", {"ok": True}, delay=5)
NAIVE = datetime(2030, 1, 1)


class Unencodable:
    """A body no serializer can encode."""


# (method, args, kwargs, field)
QUEUE_CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("enqueue", ("",), {}, "topic"),
    ("enqueue", ("has space",), {}, "topic"),
    ("enqueue", ("t" * 129,), {}, "topic"),
    ("enqueue", ("pipe|topic",), {}, "topic"),
    ("enqueue", (7,), {}, "topic"),
    ("enqueue", ("t",), {"id": ""}, "id"),
    ("enqueue", ("t",), {"id": "has space"}, "id"),
    ("enqueue", ("t",), {"id": "x" * 129}, "id"),
    ("enqueue", ("t",), {"id": "a|b"}, "id"),
    ("enqueue", ("t",), {"id": 12}, "id"),
    ("enqueue", ("t",), {"delay": -1}, "delay"),
    ("enqueue", ("t",), {"delay": float("nan")}, "delay"),
    ("enqueue", ("t",), {"delay": float("inf")}, "delay"),
    ("enqueue", ("t",), {"delay": "5s"}, "delay"),
    ("enqueue", ("t",), {"delay": True}, "delay"),
    ("enqueue", ("t",), {"delay": timedelta(seconds=-1)}, "delay"),
    ("enqueue", ("t",), {"delay": 1, "at": 2e9}, "delay"),
    ("enqueue", ("t",), {"at": NAIVE}, "at"),
    ("enqueue", ("t",), {"at": -5}, "at"),
    ("enqueue", ("t",), {"at": "tomorrow"}, "at"),
    ("enqueue", ("t",), {"at": float("nan")}, "at"),
    ("enqueue", ("t",), {"ttr": 0.5}, "ttr"),
    ("enqueue", ("t",), {"ttr": 8 * 86400}, "ttr"),
    ("enqueue", ("t",), {"ttr": "1m"}, "ttr"),
    ("enqueue", ("t",), {"max_attempts": 0}, "max_attempts"),
    ("enqueue", ("t",), {"max_attempts": 1001}, "max_attempts"),
    ("enqueue", ("t",), {"max_attempts": True}, "max_attempts"),
    ("enqueue", ("t",), {"max_attempts": 2.5}, "max_attempts"),
    ("enqueue", ("t",), {"backoff": []}, "backoff"),
    ("enqueue", ("t",), {"backoff": "fast"}, "backoff"),
    ("enqueue", ("t",), {"backoff": [1, -1]}, "backoff"),
    ("enqueue", ("t",), {"backoff": [float("inf")]}, "backoff"),
    ("enqueue", ("t",), {"headers": {"a": 1}}, "headers"),
    ("enqueue", ("t",), {"headers": {"": "x"}}, "headers"),
    ("enqueue", ("t",), {"headers": ["a"]}, "headers"),
    ("enqueue", ("t",), {"headers": {f"k{i}": "v" for i in range(33)}}, "headers"),
    ("enqueue", ("t",), {"headers": {"k": "x" * 5000}}, "headers"),
    ("enqueue", ("t", Unencodable()), {}, "body"),
    ("enqueue", ("t", "x" * (1 << 20)), {}, "body"),
    ("enqueue", ("t",), {"replace": "yes"}, "replace"),
    ("enqueue_many", (OK,), {}, "specs"),
    ("enqueue_many", ([{"topic": "t"}],), {}, "specs"),
    ("enqueue_many", (5,), {}, "specs"),
    ("enqueue_many", ([OK] * 300 + [sd.JobSpec("t", delay=-1)],), {}, "delay"),
    ("enqueue_many", ([OK] * 300 + [sd.JobSpec("bad topic")],), {}, "topic"),
    ("enqueue_many", ([OK, sd.JobSpec("t", Unencodable())],), {}, "body"),
    ("enqueue_many", ([OK, sd.JobSpec("t", id="a b")],), {}, "id"),
    ("enqueue_many", ([OK, sd.JobSpec("t", headers={"a": 1})],), {}, "headers"),  # type: ignore[dict-item]
    ("cancel", ("",), {}, "id"),
    ("cancel", (None,), {}, "id"),
    ("get", ("a b",), {}, "id"),
    ("reschedule", ("x",), {}, "delay"),
    ("reschedule", ("x",), {"delay": -1}, "delay"),
    ("reschedule", ("x",), {"delay": 1, "at": 2e9}, "delay"),
    ("reschedule", ("x",), {"at": NAIVE}, "at"),
    ("reschedule", ("",), {"delay": 1}, "id"),
    ("dead_list", (), {"limit": 0}, "limit"),
    ("dead_list", (), {"topic": "a b"}, "topic"),
    ("dead_replay", (), {"delay": -1}, "delay"),
    ("dead_replay", (), {"id": "a b"}, "id"),
    ("dead_replay", (), {"topic": ""}, "topic"),
    ("dead_purge", (), {"topic": "a b"}, "topic"),
    ("dead_purge", (), {"id": ""}, "id"),
    ("claim", ("",), {}, "group"),
    ("claim", ("g",), {"min_idle": -1}, "min_idle"),
    ("claim", ("g",), {"to": "bad consumer"}, "to"),
    ("claim", ("g",), {"topic": "a b"}, "topic"),
]


def _case_id(case: tuple[str, tuple[Any, ...], dict[str, Any], str]) -> str:
    return f"{case[0]}-{case[3]}-{QUEUE_CASES.index(case)}"


def _queue_keys(client: redis.Redis, name: str) -> list[bytes]:
    return list(client.scan_iter(match=f"*{name}*", count=1000))


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("case", QUEUE_CASES, ids=_case_id)
def test_queue_methods_refuse_bad_input_and_write_nothing(
    shared_redis: RedisServer, face: str,
    case: tuple[str, tuple[Any, ...], dict[str, Any], str],
) -> None:
    method, args, kwargs, field = case
    name = f"v{uuid.uuid4().hex[:10]}"
    checks = shared_redis.client()
    assert _queue_keys(checks, name) == []
    with pytest.raises(sd.StreamdelayError) as caught:
        if face == "sync":
            with sd.Queue(name, url=shared_redis.url) as q:
                getattr(q, method)(*args, **kwargs)
        else:
            async def call() -> None:
                async with sd.AsyncQueue(name, url=shared_redis.url) as aq:
                    await getattr(aq, method)(*args, **kwargs)

            asyncio.run(call())
    assert_names(caught.value, field)
    # this queue's keys (every key of a queue carries its name, streamdelay/protocol/keys.py),
    # not dbsize(): the shared server's keys of other tests expire meanwhile
    assert _queue_keys(checks, name) == []


def test_bad_input_on_a_queue_in_use_leaves_it_unchanged(queue: sd.Queue) -> None:
    queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}", delay=60) for i in range(5)])
    snapshot = {k: queue.client.type(k) for k in _queue_keys(queue.client, queue.name)}
    jobs = queue.client.hgetall(f"sd:{{{queue.name}#0}}:jobs")
    for method, args, kwargs, field in QUEUE_CASES:
        with pytest.raises(sd.StreamdelayError) as caught:
            getattr(queue, method)(*args, **kwargs)
        assert_names(caught.value, field)
    assert {k: queue.client.type(k) for k in _queue_keys(queue.client, queue.name)} == snapshot
    assert queue.client.hgetall(f"sd:{{{queue.name}#0}}:jobs") == jobs


# --- queue construction and options ---------------------------------------------------------











# --- worker ----------------------------------------------------------------------------------

WORKER_CASES: list[tuple[dict[str, Any], str]] = [
    ({"group": ""}, "group"),
    ({"group": "has space"}, "group"),
    ({"concurrency": 0}, "concurrency"),
    ({"concurrency": "8"}, "concurrency"),
    ({"concurrency": True}, "concurrency"),
    ({"consumer": "has space"}, "consumer"),
    ({"handler_timeout": 0}, "handler_timeout"),
    ({"handler_timeout": "5s"}, "handler_timeout"),
    ({"block": 0}, "block"),
    ({"reclaim_interval": 0}, "reclaim_interval"),
    ({"shutdown_grace": -1}, "shutdown_grace"),
]


@pytest.mark.parametrize(("options", "field"), WORKER_CASES, ids=[f for _, f in WORKER_CASES])
def test_worker_constructor_refuses_bad_options(
    options: dict[str, Any], field: str, queue: sd.Queue
) -> None:
    with pytest.raises(sd.StreamdelayError) as caught:
        sd.Worker(queue, **options)
    assert_names(caught.value, field)




def test_handler_decorator_refuses_bad_topics_and_non_functions(queue: sd.Queue) -> None:
    worker = sd.Worker(queue)
    for topic in ("", "has space", 5, "t" * 129):
        with pytest.raises(sd.ValidationError) as caught:
            worker.handler(topic)  # type: ignore[arg-type]
        assert_names(caught.value, "topic")
    with pytest.raises(sd.ConfigError) as caught_fn:
        worker.handler("t")(5)  # type: ignore[type-var]
    assert_names(caught_fn.value, "handler")
    worker.handler("t")(lambda job: None)
    with pytest.raises(sd.ConfigError) as caught_dup:
        worker.handler("t")(lambda job: None)
    assert_names(caught_dup.value, "topic")


def test_worker_without_handlers_refuses_to_serve_and_writes_nothing(queue: sd.Queue) -> None:
    before = queue.client.dbsize()
    with pytest.raises(sd.ConfigError) as caught:
        asyncio.run(sd.Worker(queue).serve())
    assert_names(caught.value, "handler")
    assert queue.client.dbsize() == before


def test_second_group_on_a_served_topic_is_refused_and_writes_nothing(queue: sd.Queue) -> None:
    def register(group: str) -> None:
        worker = sd.Worker(queue, group=group, dispatch=False)
        worker.handler("t")(lambda job: None)

        async def run() -> None:
            try:
                await worker.register()
            finally:
                await worker.client.aclose()

        asyncio.run(run())

    register("billing")
    snapshot = {k: queue.client.type(k) for k in _queue_keys(queue.client, queue.name)}
    with pytest.raises(sd.ConfigError) as caught:
        register("other")
    assert_names(caught.value, "group")
    assert {k: queue.client.type(k) for k in _queue_keys(queue.client, queue.name)} == snapshot
    assert queue.client.hgetall(f"sd:{{{queue.name}#0}}:groups") == {b"t": b"billing"}


# --- durations -------------------------------------------------------------------------------







