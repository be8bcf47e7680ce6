"""Progress (docs/results.md#progress): ``job.progress(value)`` from def and async def handlers,
``Reservation.touch(progress=)`` and HTTP ``:touch {"progress": ...}``, carried by the heartbeat
(no round trip per call), shown by ``get``, the HTTP job route, the CLI and the dashboard."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.base.models import JobInfo
from streamdelay.web.dashboard.view_models import job_view
from tests.integration.test_pull import running_dispatcher
from tests.support.web_server import WebServer
from tests.system.test_web_consumers import _call

pytestmark = pytest.mark.timeout(120)


def _evalsha_calls(q: sd.Queue) -> int:
    return int(q.client.info("commandstats")["cmdstat_evalsha"]["calls"])


def _wait_progress(q: sd.Queue, job_id: str, want: Any, timeout: float = 5.0) -> float:
    start = time.monotonic()
    while True:
        info = q.get(job_id)
        if info is not None and info.progress == want:
            return time.monotonic() - start
        assert time.monotonic() - start < timeout, (info, want)
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["def", "async"])
def test_handlers_report_progress_on_the_heartbeat(redis_url: str, queue_name: str,
                                                   kind: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    q.enqueue("t", 1, id="long")
    release = threading.Event()
    refused: list[sd.ValidationError] = []

    def report(job: sd.Job, step: int) -> None:
        job.progress({"done": step, "of": 2000})
        if step == 0:
            for bad in ("x" * 2000, float("nan"), object()):
                try:
                    job.progress(bad)
                except sd.ValidationError as exc:
                    refused.append(exc)

    if kind == "def":
        def handler(job: sd.Job) -> str:
            for step in range(2000):
                report(job, step)
            release.wait(20)
            return "ok"
    else:
        async def handler(job: sd.Job) -> str:  # type: ignore[misc]
            for step in range(2000):
                report(job, step)
            while not release.is_set():
                await asyncio.sleep(0.02)
            return "ok"

    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler("t")(handler)
    thread = threading.Thread(target=lambda: asyncio.run(worker.serve(until_idle=True)))
    before = _evalsha_calls(q)
    thread.start()
    try:
        waited = _wait_progress(q, "long", {"done": 1999, "of": 2000})
        assert waited < 3  # within about a second of the report (PROGRESS_EVERY)
        # 2,000 reports, a handful of script calls (reads, heartbeats, our get's): none per call
        assert _evalsha_calls(q) - before < 200
        assert [exc.field for exc in refused] == ["progress"] * 3
        assert "2002 bytes of JSON is over the limit of 1024" in str(refused[0])
        assert q.get("long").state == "reserved"  # type: ignore[union-attr]
    finally:
        release.set()
        thread.join(30)
    assert q.get("long") is None  # acknowledged: no progress, no job
    q.close()


def test_reservation_and_http_touch_carry_progress(web_server: WebServer) -> None:
    name = web_server.queues[0]
    base = f"/v1/queues/{name}"
    with sd.Queue(name, url=web_server.redis_url) as q, running_dispatcher(q):
        q.enqueue("prog", 1, id="pulled")
        q.enqueue("prog", 2, id="viahttp")
        [first] = q.reserve("prog", wait=5)
        first.touch(progress=0.25)
        assert q.get(first.id).progress == 0.25  # type: ignore[union-attr]
        with pytest.raises(sd.ValidationError) as refused:
            first.touch(progress=[0] * 600)
        assert refused.value.field == "progress"
        status, answer = _call(web_server, "POST", f"{base}/topics/prog:reserve",
                               {"wait_ms": 5000})
        assert status == 200, answer
        [delivery] = answer["deliveries"]
        assert _call(web_server, "POST", f"{base}/deliveries/{delivery['receipt']}:touch",
                     {"progress": {"stage": "upload", "pct": 40}}) == (200, {"outcome": "touched"})
        status, shown = _call(web_server, "GET", f"{base}/jobs/{delivery['id']}")
        assert status == 200 and shown["progress"] == {"stage": "upload", "pct": 40}
        status, bad = _call(web_server, "POST", f"{base}/deliveries/{delivery['receipt']}:touch",
                            {"progress": "x" * 5000})
        assert status == 422 and "progress" in str(bad), (status, bad)
        from tests.system.test_cli import cli

        text = cli("get", name, delivery["id"], url=web_server.redis_url).stdout
        assert 'progress' in text and '"pct":40' in text.replace(" ", "")
        first.ack()
        assert _call(web_server, "POST", f"{base}/deliveries/{delivery['receipt']}:ack")[0] == 200


def test_the_dashboard_job_page_shows_progress() -> None:
    info = JobInfo("j", "t", "reserved", 0, 0, 0, 10, 60.0, None, {}, consumer="c", idle_ms=5,
                   deliveries=1, ttr_ms=60_000, progress={"pct": 40})
    assert ("progress", '{"pct":40}') in job_view(info, 1000, "g").fields
