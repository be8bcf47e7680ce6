"""The lane packs a call's repeated head once (``Lane._packed``): the bytes sent are those the
connection itself packs, whatever the call, its keys or its values."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from streamdelay.client.enqueue_one import one_job_call
from streamdelay.client.enqueuing import prepare_values
from streamdelay.io.calls import evalsha_args
from streamdelay.io.clients import sync_client
from streamdelay.io.config import QueueConfig
from streamdelay.io.lane import Lane
from streamdelay.protocol.scripts import ScriptCall, script

URL = "redis://127.0.0.1:1/0"


def job_call(cfg: QueueConfig, job_id: str, body: Any, **fields: Any) -> ScriptCall:
    values = {"delay": None, "at": None, "ttr": None, "max_attempts": None, "backoff": None,
              "headers": None, "replace": False, "max_wait": None, **fields}
    return one_job_call(cfg, prepare_values(cfg, "t", body, id=job_id, **values))


def calls() -> list[ScriptCall]:
    one, four = QueueConfig("q", URL), QueueConfig("r", URL, partitions=4, past_tolerance=5)
    keys = one_job_call(one, prepare_values(
        one, "t", 1, None, None, "k", None, None, None, None, False, None)).keys
    return [
        job_call(one, "a", {"a": 1}), job_call(one, "b", b"raw" * 100, delay=1.5),
        job_call(four, "c", "x" * 100_000, at=time.time() + 5),
        job_call(four, "d", {"a": 1}, priority=3), job_call(one, "e", None),
        ScriptCall(script("enqueueJob"), keys,
                   (True, "x", bytearray(b"y"))),  # type: ignore[arg-type]
        ScriptCall(script("enqueueJob"), keys, (1, "x", 2.5)),
        ScriptCall(script("enqueueJob"), keys, ("1",)),
    ]


@pytest.mark.parametrize("order", [1, -1])
def test_the_lane_sends_the_bytes_the_connection_packs(order: int) -> None:
    conn = sync_client(URL, 1.0).connection_pool.make_connection()  # type: ignore[union-attr]
    lane = Lane()
    for call in calls()[::order] * 2:
        assert packed(lane._packed, conn, call) == packed(
            lambda conn, call: conn.pack_command(*evalsha_args(call)), conn, call)


def packed(pack: Callable[[Any, ScriptCall], list[bytes]], conn: Any, call: ScriptCall
           ) -> bytes | str:
    """The bytes packed, or the error's type and text (redis-py refuses a bool)."""
    try:
        return b"".join(pack(conn, call))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
