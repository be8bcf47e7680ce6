"""Execution control with real workers and a real ``streamdelay serve`` (docs/worker.md#abort,
#checkpoints, #snooze): ``cancel(id, abort=True)`` stops an ``async def`` handler and shows a
``def`` handler ``job.aborted`` within about a second (the pause watch reads the abort: no
round trip per job); checkpoints reach the next attempt after a failure, a snooze and a
graceful shutdown; a snooze spends no attempt; the CLI's ``cancel --abort``; HTTP ``DELETE
?abort=true``, a touch that answers 409 ``aborted``, ``checkpoint`` and ``snooze`` bodies and
their bad input."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import streamdelay as sd
from tests.integration.test_pull import running_dispatcher
from tests.support.web_server import WebServer
from tests.system import test_docs_examples as docs_examples
from tests.system.test_cli import cli
from tests.system.test_web_consumers import _call

pytestmark = pytest.mark.timeout(120)
ABORT_BOUND_S = 3.0  # the promise is about 1 s; a loaded shared host gets slack


@contextmanager
def serving(worker: sd.Worker) -> Iterator[threading.Thread]:
    """``worker.serve()`` in a thread, stopped (gracefully) and joined at the end."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(worker.serve(),),
                              daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        loop.call_soon_threadsafe(worker.stop)
        thread.join(30)
        loop.close()


def _wait(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("kind", ["async", "def"])
def test_abort_stops_a_running_handler(redis_url: str, queue_name: str, kind: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, keep_result=60, events=True)
    started, ended = threading.Event(), threading.Event()
    seen: list[BaseException] = []
    if kind == "async":
        async def handler(job: sd.Job) -> None:
            if job.id != "long":
                return
            started.set()
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError as exc:
                seen.append(exc)
                ended.set()
                raise
    else:
        def handler(job: sd.Job) -> None:  # type: ignore[misc]
            if job.id != "long":
                return
            started.set()
            while not job.aborted:  # a thread cannot be killed: it looks between steps
                time.sleep(0.01)
            try:
                job.check_abort()
            except sd.Aborted as exc:
                seen.append(exc)
                ended.set()
                raise

    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler("t")(handler)
    q.enqueue("t", 1, id="long")
    with serving(worker):
        assert started.wait(20)
        began = time.monotonic()
        assert q.cancel("long", abort=True) is True
        assert ended.wait(ABORT_BOUND_S), "the handler was not stopped"
        latency = time.monotonic() - began
        print(f"abort latency ({kind}): {latency * 1000:.0f} ms")
        q.enqueue("t", 2, id="next")  # the worker goes on: its slot was freed
        _wait(lambda: q.get("next") is None)
    result = q.result("long")
    assert result is not None and (result.state, result.error) == ("cancelled", "aborted")
    assert worker.counts["retried"] == 0 and worker.counts["dead"] == 0
    assert [e.detail for e in q.events(follow=False) if e.id == "long"
            and e.kind == "cancelled"] == ["aborted"]
    if kind == "def":
        assert isinstance(seen[0], sd.Aborted) and "aborted" in str(seen[0])
    q.close()


def test_checkpoints_reach_the_next_attempt_and_snooze_spends_none(
        redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, backoff=[0])
    runs: list[tuple[int, Any]] = []

    async def handler(job: sd.Job) -> str:
        runs.append((job.attempt, job.last_checkpoint))
        if len(runs) == 1:
            job.checkpoint({"page": 5})
            raise RuntimeError("flaky")  # the failure carries the checkpoint
        if len(runs) == 2:
            job.checkpoint({"page": 9})
            raise sd.Snooze(0.1)  # back later, no attempt spent
        with pytest.raises(sd.ValidationError) as err:
            job.checkpoint(object())
        assert err.value.field == "checkpoint"
        return "done"

    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler("t")(handler)
    q.enqueue("t", 1, id="pages", max_attempts=2)
    asyncio.run(worker.serve(until_idle=True))
    assert runs == [(1, None), (2, {"page": 5}), (2, {"page": 9})]
    assert worker.counts["dead"] == 0
    q.close()


def test_a_graceful_shutdown_writes_the_checkpoint(redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    started = threading.Event()
    last: list[int] = []

    async def handler(job: sd.Job) -> None:
        row = 0
        started.set()
        try:
            while True:  # a new checkpoint every few ms, until the shutdown cancels it
                row += 1
                job.checkpoint({"row": row})
                await asyncio.sleep(0.005)
        finally:
            last.append(row)  # written by the hand-back only: the watch stopped with the worker

    worker = sd.Worker(q, group="g", block=0.2, shutdown_grace=0.1)
    worker.handler("t")(handler)
    q.enqueue("t", 1, id="rows")
    with serving(worker):
        assert started.wait(20)
    info = q.get("rows")
    assert info is not None and (info.state, info.attempts) == ("ready", 0)  # handed back
    with running_dispatcher(q):
        [taken] = q.reserve("t", group="g", wait=5)
    assert (taken.attempt, taken.last_checkpoint) == (1, {"row": last[0]})
    taken.ack()
    q.close()


def test_cli_cancel_abort(redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, keep_result=60)
    q.enqueue("t", 1, id="gone-soon", delay=60)
    done = cli("cancel", queue_name, "gone-soon", "--abort", url=redis_url)
    assert (done.returncode, done.stdout.strip()) == (0, "aborted gone-soon"), done
    again = cli("cancel", queue_name, "gone-soon", "--abort", url=redis_url)
    assert again.returncode == 1 and len(again.stderr.strip().splitlines()) == 1, again
    bad = cli("cancel", queue_name, "bad id!", "--abort", url=redis_url)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad
    assert "id:" in bad.stderr
    q.close()


def test_http_abort_checkpoint_and_snooze(web_server: WebServer) -> None:
    name = web_server.queues[0]
    base = f"/v1/queues/{name}"
    with sd.Queue(name, url=web_server.redis_url) as q, running_dispatcher(q):
        q.enqueue("h", 1, id="h1", max_attempts=1)
        status, answer = _call(web_server, "POST", f"{base}/topics/h:reserve", {"wait_ms": 5000})
        assert status == 200, answer
        [delivery] = answer["deliveries"]
        assert delivery["last_checkpoint"] is None  # none: always sent, null
        receipt = delivery["receipt"]
        assert _call(web_server, "POST", f"{base}/deliveries/{receipt}:touch",
                     {"checkpoint": {"offset": 7}}) == (200, {"outcome": "touched"})
        status, bad = _call(web_server, "POST", f"{base}/deliveries/{receipt}:touch",
                            {"checkpoint": "x" * 70_000})
        assert status == 422 and bad["error"]["field"] == "checkpoint", bad
        status, bad = _call(web_server, "POST", f"{base}/deliveries/{receipt}:fail",
                            {"error": "", "snooze": -1})
        assert status in (400, 422) and bad["error"]["field"] == "snooze", bad
        assert _call(web_server, "POST", f"{base}/deliveries/{receipt}:fail",
                     {"error": "", "snooze": 0}) == (200, {"outcome": "snoozed"})
        status, answer = _call(web_server, "POST", f"{base}/topics/h:reserve", {"wait_ms": 5000})
        [again] = answer["deliveries"]
        assert (again["attempt"], again["last_checkpoint"]) == (1, {"offset": 7})
        status, done = _call(web_server, "DELETE", f"{base}/jobs/h1?abort=true")
        assert status == 200, done
        status, refused = _call(web_server, "POST", f"{base}/deliveries/{again['receipt']}:touch")
        assert status == 409 and refused["error"]["code"] == "aborted", refused
        result = q.result("h1")
        assert result is None or result.error == "aborted"
    status, spec = _call(web_server, "GET", "/openapi.json")
    assert status == 200
    schemas = spec["components"]["schemas"]
    assert "checkpoint" in schemas["TouchBody"]["properties"]
    assert {"snooze", "checkpoint"} <= set(schemas["FailBody"]["properties"])


example_env = docs_examples.example_env  # the fixture: a private redis-server for the example


def test_the_worker_guide_example(example_env: dict[str, str]) -> None:
    out = docs_examples.run_example("execution_control.py", example_env).splitlines()
    assert out == [
        "export-1: attempt 1: page 0",
        "export-1: attempt 1: page 1",
        "export-1: attempt 1: page 2",
        "export-1: attempt 2: page 3",
        "export-1: attempt 2: page 4",
        "wait-1: attempt 1: upstream not ready, snoozing",
        "wait-1: attempt 1: upstream ready",
        "slow-1: aborted, stopping",
        "slow-1 ended cancelled: aborted",
    ]
