"""The producer refuses what a worker could not decode or would not get back as sent.

- a body nested deeper than ``codec.MAX_BODY_DEPTH`` (a worker decoding it would hit Python's
  recursion limit): ``sd.BodyEncodeError`` naming ``body`` and the limit; the deepest body
  allowed reaches a real worker intact;
- NaN or Infinity in a JSON body (JSON has neither; they used to be stored as ``null``).

Both faces (sync ``Queue``, ``AsyncQueue``) and the CLI; nothing is written on refusal.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.codec import MAX_BODY_DEPTH
from tests.support.redis_server import RedisServer
from tests.system.test_cli import assert_one_line_error, cli

pytestmark = pytest.mark.timeout(60)


def nested(depth: int, leaf: Any = 1) -> Any:
    """A list nested ``depth`` deep (``[[1]]`` is 2 deep)."""
    body: Any = leaf
    for _ in range(depth):
        body = [body]
    return body


def enqueue(face: str, url: str, name: str, body: Any, **options: Any) -> sd.EnqueueResult:
    """One ``enqueue`` on the sync or the async face."""
    if face == "sync":
        with sd.Queue(name, url=url, **options) as queue:
            return queue.enqueue("t", body, id="j")

    async def run() -> sd.EnqueueResult:
        async with sd.AsyncQueue(name, url=url, **options) as queue:
            return await queue.enqueue("t", body, id="j")

    return asyncio.run(run())


def refused(face: str, url: str, body: Any, **options: Any) -> sd.StreamdelayError:
    """The error of enqueueing ``body`` (one call and enqueue_many), after checking that
    nothing of the queue was written."""
    name = f"b{uuid.uuid4().hex[:10]}"
    with pytest.raises(sd.BodyEncodeError) as caught:
        enqueue(face, url, name, body, **options)
    with sd.Queue(name, url=url, **options) as queue, pytest.raises(sd.BodyEncodeError):
        queue.enqueue_many([sd.JobSpec("t", 1), sd.JobSpec("t", body)])
    with sd.Queue(name, url=url) as queue:
        assert list(queue.client.scan_iter(match=f"*{name}*")) == []
    assert caught.value.field == "body" and str(caught.value).startswith("body: ")
    return caught.value


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_a_body_nested_too_deep_is_refused_naming_the_limit(
    shared_redis: RedisServer, face: str, serializer: str
) -> None:
    for depth in (MAX_BODY_DEPTH + 1, 990, 5000):
        error = refused(face, shared_redis.url, nested(depth), serializer=serializer)
        assert f"deeper than {MAX_BODY_DEPTH}" in str(error), str(error)
    deep_dict: Any = {}
    for _ in range(MAX_BODY_DEPTH + 1):
        deep_dict = {"a": deep_dict}
    assert f"{MAX_BODY_DEPTH}" in str(refused(face, shared_redis.url, deep_dict,
                                              serializer=serializer))


@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_the_deepest_body_allowed_reaches_a_worker_intact(
    queue_name: str, redis_url: str, serializer: str
) -> None:
    body = {"wide": list(range(5000)), "deep": nested(MAX_BODY_DEPTH - 1)}  # 128 in all
    queue = sd.Queue(queue_name, url=redis_url, serializer=serializer)
    queue.enqueue("t", body, id="deepest")
    got: list[Any] = []
    worker = sd.Worker(queue, block=0.05)

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        got.append(job.body)

    worker.run(until_idle=True)
    assert got == [body]
    assert queue.stats().total.dead == 0
    queue.close()


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_in_a_json_body_are_refused(
    shared_redis: RedisServer, face: str, bad: float
) -> None:
    for body in (bad, [1, 2, bad], {"a": {"b": [None, bad]}}):
        error = refused(face, shared_redis.url, body)
        assert "JSON" in str(error) and repr(bad) in str(error), str(error)


def test_nan_travels_as_itself_with_msgpack(queue: sd.Queue, redis_url: str) -> None:
    with sd.Queue(queue.name, url=redis_url, serializer="msgpack") as packed:
        packed.enqueue("t", {"x": math.nan, "y": math.inf, "z": None}, id="n")
        info = packed.get("n")
    assert info is not None and math.isnan(info.body["x"]) and info.body["y"] == math.inf
    assert info.body["z"] is None


def test_json_body_with_null_and_brackets_in_strings_is_kept(queue: sd.Queue) -> None:
    body = {"n": None, "s": "[" * 500 + "null" + "{" * 500, "list": [None] * 300}
    queue.enqueue("t", body, id="plain")
    info = queue.get("plain")
    assert info is not None and info.body == body


def test_cli_enqueue_refuses_deep_and_non_finite_bodies(redis_url: str, queue_name: str
                                                        ) -> None:
    for text in ("[" * 990 + "]" * 990, "[" * 50_000 + "]" * 50_000, '{"a": NaN}',
                 "[Infinity]"):
        result = cli("enqueue", queue_name, "t", text, url=redis_url)
        assert_one_line_error(result, 2)
        assert "body" in result.stderr, result.stderr
    with sd.Queue(queue_name, url=redis_url) as queue:
        assert list(queue.client.scan_iter(match=f"*{queue_name}*")) == []
    ok = cli("enqueue", queue_name, "t", json.dumps(nested(MAX_BODY_DEPTH)), url=redis_url)
    assert ok.returncode == 0, ok.stderr
