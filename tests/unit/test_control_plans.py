"""Execution control without Redis (docs/worker.md#abort, #checkpoints, #snooze): the plans'
script arguments (``consume/core/control_plans.py``), the abort reads' parsing, the checkpoint
and snooze
checks, and the worker's ``Delivery.abort`` (hooks, task, thread)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.base.control import CHECKPOINT_LIMIT, checkpoint, decode_checkpoint
from streamdelay.consume.core.control_plans import (
    aborts_read,
    cancel_call,
    checkpoint_args,
    fail_plan,
    parse_aborts,
)
from streamdelay.consume.delivery import Delivery, outcome_of
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import ScriptCall
from tests.unit.test_replies import drive

KEYS = PartitionKeys("orders", 0)


def test_cancel_sends_the_abort_flag_only_when_asked() -> None:
    assert cancel_call(KEYS, "j", 5, False).args == ("j", 5)
    assert cancel_call(KEYS, "j", 5, True).args == ("j", 5, "1")


def test_fail_plan_carries_snooze_and_checkpoint() -> None:
    seen: list[Any] = []

    def answer(step: Any) -> Any:
        seen.append(step)
        return [1, 123]

    reply, _ = drive(fail_plan(KEYS, "g", "t", "j", "1-0", 200, False, "Snooze: x", 0, True,
                               b'{"a":1}'), answer)
    assert reply.outcome == 1
    [call] = seen
    assert isinstance(call, ScriptCall) and call.script.name == "failJob"
    assert call.args[-2:] == ("1", b'{"a":1}')
    assert checkpoint_args(2, "j", b"7") == (-2, "j", 0, b"7")


def test_abort_reads_parse_members_and_the_newest_time() -> None:
    assert aborts_read(KEYS, 17).args == ("ZRANGEBYSCORE", KEYS.prefix + "aborts", 17, "+inf",
                                          "WITHSCORES")
    found, newest = parse_aborts([b"a.b|1-0", b"100", b"t|2-5", b"250"])
    assert found == [("a.b", "1-0"), ("t", "2-5")] and newest == 250
    assert parse_aborts(None) == ([], 0)


def test_checkpoint_bounds_and_round_trip() -> None:
    assert decode_checkpoint(checkpoint({"page": 3})) == {"page": 3}
    assert len(checkpoint("x" * (CHECKPOINT_LIMIT - 2))) == CHECKPOINT_LIMIT
    for bad, said in ((object(), "cannot be encoded"), ("x" * CHECKPOINT_LIMIT, "64 KiB"),
                      ([float("inf")], "checkpoint")):
        with pytest.raises(sd.ValidationError, match=said) as err:
            checkpoint(bad)
        assert err.value.field == "checkpoint"
    assert decode_checkpoint(b"not json") is None and decode_checkpoint(None) is None
    with pytest.raises(sd.ValidationError) as err:
        sd.Snooze(-0.5)
    assert err.value.field == "delay"


def _job(delivery: Delivery) -> sd.Job:
    job = sd.Job(id="j", topic="t", body=None, due=0, created=0, attempt=1, max_attempts=3,
                 ttr=60.0, headers={}, entry_id="1-0", partition=0)
    object.__setattr__(job, "_control", delivery)
    return job


def test_snooze_settles_without_an_attempt_and_checkpoint_needs_a_worker() -> None:
    delivery = Delivery(0, "t", "1-0")
    job = _job(delivery)
    settled = outcome_of(sd.Snooze(1.5), job, sd.Backoff(), 0.0, None)
    assert (settled.kind, settled.delay_ms) == ("snooze", 1500)
    job.checkpoint([1, 2])
    assert delivery.checkpoint == b"[1,2]" and delivery.checkpoint_fresh
    bare = sd.Job(id="j", topic="t", body=None, due=0, created=0, attempt=1, max_attempts=3,
                  ttr=60.0, headers={}, entry_id="1-0", partition=0)
    with pytest.raises(sd.ValidationError) as err:
        bare.checkpoint(1)
    assert err.value.field == "checkpoint"
    assert bare.aborted is False and bare.last_checkpoint is None


def test_abort_cancels_a_task_runs_hooks_and_leaves_threads_running() -> None:
    async def run() -> None:
        delivery = Delivery(0, "t", "1-0", job_id="j")
        job = _job(delivery)
        delivery.task = asyncio.ensure_future(asyncio.sleep(60))
        delivery.abort()
        await asyncio.sleep(0)
        assert delivery.task.cancelled() and job.aborted
        with pytest.raises(sd.Aborted):
            job.check_abort()
        hooked = Delivery(0, "t", "2-0")
        calls: list[Delivery] = []
        def broken(_: Delivery) -> None:
            raise RuntimeError("a failing hook is logged, the others run")

        hooked.on_abort = [broken, calls.append]
        hooked.task = asyncio.ensure_future(asyncio.sleep(60))
        hooked.abort()
        hooked.abort()  # once
        await asyncio.sleep(0)
        assert calls == [hooked] and not hooked.task.done()  # left to the hook
        hooked.task.cancel()
        threaded = Delivery(0, "t", "3-0")
        threaded.thread = concurrent.futures.Future()
        threaded.task = asyncio.ensure_future(asyncio.sleep(60))
        threaded.abort()
        await asyncio.sleep(0)
        assert threaded.aborted and not threaded.task.done()  # the thread holds the slot
        threaded.task.cancel()

    asyncio.run(run())
