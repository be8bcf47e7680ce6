"""Debounce (docs/producer.md#debounce): ``replace=True`` makes the last body win and moves the
due time; ``max_wait=`` bounds how far: never past the first enqueue of the id plus max_wait,
counted on the Redis clock in the enqueue script."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.support.promoting import promote_due


def test_replace_is_the_debounce_recipe_the_last_body_wins_and_the_due_time_moves(
        queue: sd.Queue) -> None:
    first = queue.enqueue("search.reindex", {"rev": 1}, id="reindex-7", delay=0.4)
    time.sleep(0.05)
    last = queue.enqueue("search.reindex", {"rev": 2}, id="reindex-7", delay=0.4, replace=True)
    assert last.due > first.due and not last.created
    info = queue.get("reindex-7")
    assert info is not None and info.body == {"rev": 2} and info.due == last.due
    handled: list[Any] = []
    worker = sd.Worker(queue, group="debounce", block=0.1)

    @worker.handler("search.reindex")
    def reindex(job: sd.Job) -> None:
        handled.append(job.body)

    worker.run(until_idle=True)
    assert handled == [{"rev": 2}]  # one run, with the last body


def test_max_wait_caps_the_due_time_at_the_first_enqueue_plus_max_wait(queue: sd.Queue) -> None:
    results = []
    started = time.monotonic()
    while time.monotonic() - started < 1.6:  # an update every 50 ms, each asking for +0.5 s
        results.append(queue.enqueue("search.reindex", {"n": len(results)}, id="r", delay=0.5,
                                     replace=True, max_wait=1.0))
        time.sleep(0.05)
    info = queue.get("r")
    assert info is not None
    born = info.created  # the first enqueue of the series: kept while the job is delayed
    assert results[0].due == born + 500
    assert all(r.due <= born + 1000 for r in results)
    assert results[-1].due == born + 1000  # pinned: later updates no longer move it
    assert [r.due for r in results] == sorted(r.due for r in results)
    assert info.body == {"n": len(results) - 1}


def test_after_delivery_a_new_series_starts(queue: sd.Queue) -> None:
    queue.enqueue("t", 1, id="d", replace=True, max_wait=0.2)
    dispatcher = sd.Dispatcher(queue.config)
    asyncio.run(promote_due(dispatcher, PartitionKeys(queue.name, 0)))
    time.sleep(0.3)
    again = queue.enqueue("t", 2, id="d", delay=0.1, replace=True, max_wait=5)
    info = queue.get("d")
    assert info is not None and info.state == "delayed"
    assert again.due == info.created + 100  # counted from this call, not the first series


def test_max_wait_on_enqueue_many_and_the_async_face(queue: sd.Queue) -> None:
    [one] = queue.enqueue_many([sd.JobSpec("t", 1, id="m", delay=60, replace=True,
                                           max_wait=2)])
    info = queue.get("m")
    assert info is not None and one.due == info.created + 2000

    async def run() -> int:
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as aq:
            return (await aq.enqueue("t", 2, id="m", delay=60, replace=True, max_wait=2)).due

    assert asyncio.run(run()) == one.due  # the same series: still pinned at created + 2 s


@pytest.mark.parametrize(("options", "field"), [
    ({"max_wait": 1}, "max_wait"),  # without replace=True
    ({"max_wait": -1, "replace": True}, "max_wait"),
    ({"max_wait": "1s", "replace": True}, "max_wait"),
    ({"max_wait": True, "replace": True}, "max_wait"),
])
def test_bad_max_wait_names_the_field_and_writes_nothing(queue: sd.Queue, options: dict[str, Any],
                                                          field: str) -> None:
    with pytest.raises(sd.ValidationError) as err:
        queue.enqueue("t", 1, id="bad", **options)
    assert err.value.field == field
    queue.enqueue("t", 1, id="other", delay=60)
    assert queue.get("bad") is None


def test_cli_enqueue_takes_max_wait(queue: sd.Queue) -> None:
    import subprocess
    import sys

    def enqueue(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "streamdelay", "enqueue", queue.name, "t",
                               "{}", "--id", "c", "--delay", "1m", *extra, "--url",
                               queue.config.url, "--json"], capture_output=True, text=True,
                              timeout=60)

    done = enqueue("--replace", "--max-wait", "10s")
    assert done.returncode == 0, done.stderr
    info = queue.get("c")
    assert info is not None and info.due == info.created + 10_000
    refused = enqueue("--max-wait", "10s")  # without --replace
    assert refused.returncode == 2 and "max_wait" in refused.stderr
