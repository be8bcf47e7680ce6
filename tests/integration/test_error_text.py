"""The error kept with a failed job (docs/reliability.md#dead-letters): ``Type: message`` and the
innermost frames (the handler's own code), never the worker's machinery frames in front of them,
bounded in size without cutting a line; and the dead list shows when a job died, not the due time
it had."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.deliveries import ERROR_TEXT_LIMIT
from tests.integration.test_dead_ends import kinds
from tests.integration.test_workflows import run_worker

pytestmark = pytest.mark.timeout(120)
MACHINERY = ("concurrent/futures", "run_in_thread", "streamdelay/consumer", "asyncio/")


def shallow_failure(job: sd.Job) -> None:
    """A def handler (run in the worker's threads) that fails in its own frame."""
    raise ValueError(f"card declined for {job.id}")


async def async_shallow_failure(job: sd.Job) -> None:
    """The same, as an async def handler."""
    raise ValueError(f"card declined for {job.id}")


def deep_failure(job: sd.Job) -> None:
    """A failure 200 calls deep, with a long message: more than the bound holds."""
    def descend(depth: int) -> None:
        if depth == 0:
            raise KeyError("innermost " + "m" * 3000)
        descend(depth - 1)
    descend(200)


@pytest.mark.parametrize("handler", [shallow_failure, async_shallow_failure],
                         ids=["def", "async"])
def test_a_dead_jobs_error_starts_with_the_handlers_own_frame(
        redis_url: str, queue_name: str, handler: Callable[[sd.Job], Any]) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True) as q:
        q.enqueue("t", {}, id="j1", max_attempts=1)
        run_worker(q, handler)
        [dead] = q.dead_list()
        info = q.get("j1")
        assert info is not None and info.error == dead.error
        lines = dead.error.splitlines()
        assert lines[0] == "ValueError: card declined for j1"
        assert not any(part in dead.error for part in MACHINERY), dead.error
        # the first frame shown is the handler's: what a 300-character list cell or the
        # event's 512 bytes show (docs/events.md#kinds)
        assert f", in {handler.__name__}" in lines[2], dead.error
        assert 'raise ValueError(f"card declined for {job.id}")' in dead.error[:300]
        [event] = [e for e in q.events(follow=False) if e.id == "j1" and e.kind == "dead"]
        assert f", in {handler.__name__}" in event.detail
        assert kinds(q, "j1")[-1] == "dead"


def test_a_deep_failures_error_keeps_its_message_and_innermost_frames_within_the_bound(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", {}, id="deep", max_attempts=1)
        run_worker(q, deep_failure)
        [dead] = q.dead_list()
        text = dead.error
        assert len(text) <= ERROR_TEXT_LIMIT
        assert text.startswith("KeyError: 'innermost mmm")
        lines = text.splitlines()
        # the innermost frame (the raise) is the last one kept; outer ones are counted
        assert lines[-1].strip() == 'raise KeyError("innermost " + "m" * 3000)', text[-300:]
        assert "in descend" in lines[-2]
        assert any("outer frames not shown" in line for line in lines[:4]), text[:400]
        assert not any(part in text for part in MACHINERY)
        # whole lines only: every frame line is complete, no line is cut in its middle
        frames = [line for line in lines if line.startswith('  File "')]
        assert frames and all(line.endswith(", in descend") for line in frames)


def test_the_dead_list_shows_when_the_job_died_not_its_old_due_time(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", {}, id="old", max_attempts=1, at=time.time() - 1800)
        seconds, micros = q.client.time()
        before = seconds * 1000 + micros // 1000
        run_worker(q, shallow_failure)
        seconds, micros = q.client.time()
        after = seconds * 1000 + micros // 1000
        info = q.get("old")
        assert info is not None and info.state == "dead"
        assert info.due < before - 1_700_000  # due half an hour ago
        assert info.died is not None and before <= info.died <= after
        [dead] = q.dead_list()
        assert before <= dead.at <= after
        [listed] = q.jobs("dead").jobs
        assert listed.died == info.died
