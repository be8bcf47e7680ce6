"""Ids shaped like a schedule's tick (``<name>@<digits>``) belong to schedules only: every
producer entry point refuses them with field ``id`` and writes nothing, so no producer (an HTTP
write token included) can take a tick's id before the schedule fires it and run its own topic
and body in its place; the schedule's own firing still creates them (docs/schedules.md)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import streamdelay as sd
from streamdelay.dispatch.schedule_firing import LEAD_MS
from streamdelay.dispatch.schedule_spec import home_keys
from tests.support.redis_server import wait_until
from tests.support.web_server import WebServer
from tests.system.test_schedules import fire_now, tick_ids

TICK_SHAPED = ["nightly@1795711622000", "a.b:c/d+e=f-g_h@0", "x@12"]
NOT_TICKS = ["user@example.com", "nightly@", "@123", "a@1b", "mail-1", "a@b@12"]


@pytest.mark.parametrize("job_id", TICK_SHAPED)
def test_every_python_producer_path_refuses_a_tick_shaped_id(queue: sd.Queue, job_id: str
                                                             ) -> None:
    queue.enqueue("t", 0, id="exists", delay=60)  # the queue exists: get answers
    with pytest.raises(sd.ValidationError) as one:
        queue.enqueue("t", {"mine": 1}, id=job_id)
    assert one.value.field == "id" and "schedule" in str(one.value)
    with pytest.raises(sd.ValidationError) as many:
        queue.enqueue_many([sd.JobSpec("t", 1, id="fine"), sd.JobSpec("t", 2, id=job_id)])
    assert many.value.field == "id"
    with pytest.raises(sd.ValidationError):
        queue.enqueue("t", {"mine": 1}, id=job_id, replace=True)

    async def on_async() -> None:
        async with sd.AsyncQueue(queue.name, url=queue.config.url) as aq:
            with pytest.raises(sd.ValidationError) as caught:
                await aq.enqueue("t", 1, id=job_id)
            assert caught.value.field == "id"

    asyncio.run(on_async())
    assert queue.get(job_id) is None and queue.get("fine") is None


@pytest.mark.parametrize("job_id", NOT_TICKS)
def test_other_ids_with_an_at_sign_are_still_accepted(queue: sd.Queue, job_id: str) -> None:
    assert queue.enqueue("t", 1, id=job_id, delay=60).created


def test_http_single_and_batch_refuse_it_with_field_id(web_server: WebServer) -> None:
    base = f"/v1/queues/{web_server.queues[0]}"
    status, error = web_server.request("POST", f"{base}/jobs", {
        "topic": "evil", "body": {"x": 1}, "id": "nightly@1795711622000"}, token="writer")
    assert status == 422 and error["error"]["field"] == "id", (status, error)
    assert "schedule" in error["error"]["message"]
    status, error = web_server.request("POST", f"{base}/jobs:batch", {"jobs": [
        {"topic": "evil", "id": "batch-ok"}, {"topic": "evil", "id": "beat@60000"}]},
        token="writer")
    assert status == 422 and error["error"]["field"] == "jobs[1].id", (status, error)
    for job_id in ("nightly@1795711622000", "batch-ok", "beat@60000"):
        assert web_server.request("GET", f"{base}/jobs/{job_id}")[0] == 404


def test_cli_refuses_it_with_a_usage_error(queue: sd.Queue) -> None:
    queue.enqueue("t", 0, id="exists", delay=60)
    done = subprocess.run([sys.executable, "-m", "streamdelay", "enqueue", queue.name, "t", "{}",
                           "--id", "nightly@1795711622000", "--url", queue.config.url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "id" in done.stderr and "schedule" in done.stderr
    assert "Traceback" not in done.stderr
    assert queue.get("nightly@1795711622000") is None


def test_the_schedule_still_fires_its_ticks_and_they_can_be_read_and_cancelled(
        redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("beat", "t", {"n": 1}, every=1)
    keys = home_keys(q.name, 1, "beat")
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    fire_now(q, keys)
    ticks = tick_ids(q, keys, "beat", "t")
    assert ticks
    info = q.get(f"beat@{ticks[0]}")
    assert info is not None and info.body == {"n": 1}
    assert q.reschedule(f"beat@{ticks[-1]}", delay=60) is True  # operators act on ticks by id
    assert q.cancel(f"beat@{ticks[-1]}") is True
    q.close()
