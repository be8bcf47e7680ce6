"""The Django integration's scenario, run as a program inside the example project of
docs/examples/django_site (cwd) by tests/system/test_integrations_django.py, once under the
django-tasks backport and once under Django 6's django.tasks:

``enqueue``: enqueue the shop's tasks (sync, async, deferred, prioritized, failing), through a
view too; print what was enqueued and how the queue holds it, as JSON.
``check IDS_JSON``: read every result back (get_result, aget_result, refresh) after
``manage.py streamdelay_worker --until-idle`` ran them; print what it read, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_config.settings")
django.setup()

from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

import streamdelay as sd  # noqa: E402
from streamdelay.contrib.django import StreamdelayBackend  # noqa: E402
from streamdelay.contrib.django import framework as fw  # noqa: E402
from streamdelay.contrib.django.task_worker import build_worker  # noqa: E402
from tests.support import django_probe_tasks as probe  # noqa: E402

from shop import tasks  # noqa: E402


def _backend() -> StreamdelayBackend:
    backend = fw.task_backends()["default"]
    assert isinstance(backend, StreamdelayBackend)
    return backend


def _result(found: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "status": str(found.status), "attempts": found.attempts, "args": found.args,
        "kwargs": found.kwargs, "task": found.task.module_path,
        "queue_name": found.task.queue_name, "priority": found.task.priority,
        "errors": [[e.exception_class_path, e.traceback] for e in found.errors],
        "times": {name: (getattr(found, name).timestamp() if getattr(found, name) else None)
                  for name in ("enqueued_at", "started_at", "finished_at")},
        "finished": found.is_finished}
    try:
        out["return_value"] = found.return_value
    except ValueError as exc:
        out["return_value_error"] = str(exc)
    if found.errors:
        out["exception_class"] = fw.module_path(found.errors[0].exception_class)
    return out


def enqueue() -> dict[str, Any]:
    """Enqueue everything; report the jobs as streamdelay holds them."""
    run_after = timezone.now() + timedelta(seconds=1.5)
    ids = {
        "close": tasks.close_order.enqueue(42).id,
        "receipt": tasks.send_receipt.using(run_after=run_after).enqueue(42, "ada@example.com")
        .id,
        "stock": asyncio.run(tasks.refresh_stock.aenqueue("SKU-1234")).id,
        "charge_ok": tasks.charge.enqueue(1, 500).id,
        "charge_bad": tasks.charge.enqueue(2, 500_000).id,
    }
    for label, priority in (("low", -50), ("mid", 0), ("high", 80)):
        ids[f"probe_{label}"] = probe.record.using(priority=priority).enqueue(label).id
    view = Client().get("/orders/7/close")
    assert view.status_code == 200, view.content
    ids.update({f"view_{name}": value for name, value in view.json().items()})
    refused = {}
    for name, call in (("queue_name", lambda: tasks.charge.using(queue_name="nope")),
                       ("arguments", lambda: tasks.charge.enqueue(3, object()))):
        try:
            call()
            refused[name] = "accepted"
        except fw.InvalidTask as exc:
            refused[name] = str(exc)
    ready = tasks.close_order.get_result(ids["close"])
    with sd.Queue("shop", url=_backend().url) as queue:
        jobs = {name: queue.get(job_id) for name, job_id in ids.items()}
        # the view's receipt waits 10 minutes: due now, so the worker's --until-idle ends
        assert queue.reschedule(ids["view_receipt"], delay=0)
    return {"framework": fw.NAME, "django": django.get_version(), "ids": ids,
            "run_after": run_after.timestamp(), "ready": _result(ready), "refused": refused,
            "jobs": {name: {"topic": job.topic, "state": job.state, "priority": job.priority,
                            "due": job.due, "body": job.body}
                     for name, job in jobs.items() if job is not None}}


def check(ids: dict[str, str]) -> dict[str, Any]:
    """Read every result back after the worker ran."""
    read = {name: _result(_backend().get_result(job_id)) for name, job_id in ids.items()}
    read["close_via_task"] = _result(tasks.close_order.get_result(ids["close"]))

    async def reading() -> Any:
        return await tasks.refresh_stock.aget_result(ids["stock"])

    read["stock_async"] = _result(asyncio.run(reading()))
    try:
        _backend().get_result("no-such-task")
        read["unknown"] = "found"
    except fw.TaskResultDoesNotExist:
        read["unknown"] = "TaskResultDoesNotExist"
    # with max_attempts above 1 (and retries an hour apart: OPTIONS pass queue options), a
    # failed attempt leaves the task READY again, its attempt counted
    retrying = StreamdelayBackend("default", {"QUEUES": ["default"], "OPTIONS": {
        "url": _backend().url, "queue": "shop", "max_attempts": 3, "backoff": [3600]}})
    again = retrying.enqueue(tasks.charge, [4, 500_000], {})
    worker = build_worker(retrying, ["default"], concurrency=1)

    async def until_retried() -> Any:
        serving = asyncio.ensure_future(worker.serve())
        try:
            for _ in range(600):
                found = await retrying.aget_result(again.id)
                if (found.attempts, str(found.status)) == (1, "READY") or serving.done():
                    return found
                await asyncio.sleep(0.05)
            raise AssertionError("the first attempt never failed")
        finally:
            worker.stop()
            await serving

    read["retried"] = _result(asyncio.run(until_retried()))
    # refresh(): a receipt due in 10 minutes, read while it waits, then made due now and run
    # here; the result object read before it ran sees it finished
    later = timezone.now() + timedelta(minutes=10)
    waiting = tasks.send_receipt.using(run_after=later).enqueue(8, "alan@example.com")
    waiting = tasks.send_receipt.get_result(waiting.id)
    before = str(waiting.status)
    with sd.Queue("shop", url=_backend().url) as queue:
        assert queue.reschedule(waiting.id, delay=0)
    build_worker(_backend(), ["emails"], concurrency=1).run(until_idle=True)
    waiting.refresh()
    read["refresh"] = {"before": before, "after": _result(waiting)}
    return read


if __name__ == "__main__":
    if sys.argv[1] == "enqueue":
        print(json.dumps(enqueue()))
    else:
        print(json.dumps(check(json.loads(sys.argv[2]))))
