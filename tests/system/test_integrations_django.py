"""The Django integration (docs/integrations.md#django) in a real Django project: the example
shop of docs/examples/django_site, as separate processes against a real redis-server. The
shop's tasks are enqueued (sync, async, deferred, prioritized, failing, from a view), ``manage.py
streamdelay_worker --until-idle`` runs them, and another process reads every result back.

Twice: on the django-tasks backport (the suite's venv: Django < 6) and on Django 6's own
``django.tasks`` (a venv of a Python >= 3.12 this machine has, made once and kept:
tests/support/django6_venv.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.django6_venv import django6_python
from tests.support.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "docs" / "examples" / "django_site"
SCENARIO = ROOT / "tests" / "support" / "django_scenario.py"


def _run(python: str, args: list[str], env: dict[str, str], timeout: float = 120
         ) -> tuple[str, str]:
    done = subprocess.run([python, *args], cwd=SITE, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout, done.stderr


def _json(python: str, args: list[str], env: dict[str, str]) -> Any:
    """The JSON the scenario prints last on stdout (logs go to stderr)."""
    return json.loads(_run(python, [str(SCENARIO), *args], env)[0].splitlines()[-1])


def _scenario(python: str, redis: RedisServer, tmp_path: Path
              ) -> tuple[dict[str, Any], dict[str, Any], str, list[str]]:
    log = tmp_path / "probe.log"
    log.write_text("")
    env = dict(os.environ, STREAMDELAY_URL=redis.url, PROBE_LOG=str(log),
               PYTHONPATH=f"{SITE}{os.pathsep}{ROOT}", PYTHONUNBUFFERED="1")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    enqueued = _json(python, ["enqueue"], env)
    worked = "".join(_run(python, ["manage.py", "streamdelay_worker", "--until-idle",
                                   "--concurrency", "1"], env))
    read = _json(python, ["check", json.dumps(enqueued["ids"])], env)
    return enqueued, read, worked, log.read_text().split()


# the first run makes the Django 6 venv (about a minute; pip's limit is 10)
@pytest.mark.timeout(900)
@pytest.mark.parametrize("framework", ["django_tasks", "django.tasks"])
def test_django_project_runs_its_tasks_on_streamdelay(
        framework: str, own_redis: RedisServer, tmp_path: Path) -> None:
    python = sys.executable if framework == "django_tasks" else django6_python()
    enqueued, read, worked, ran = _scenario(python, own_redis, tmp_path)
    assert enqueued["framework"] == framework
    assert (int(enqueued["django"].split(".")[0]) >= 6) == (framework == "django.tasks")

    # enqueue: Django queue names are topics, priorities mapped onto 0-9, run_after the due time
    jobs = enqueued["jobs"]
    assert {name: (job["topic"], job["priority"]) for name, job in jobs.items()} == {
        "close": ("default", 7), "receipt": ("emails", 5), "stock": ("default", 5),
        "charge_ok": ("default", 5), "charge_bad": ("default", 5),
        "probe_low": ("default", 2), "probe_mid": ("default", 5), "probe_high": ("default", 9),
        "view_close": ("default", 7), "view_receipt": ("emails", 4)}
    assert jobs["receipt"]["due"] == pytest.approx(enqueued["run_after"] * 1000, abs=1)
    assert jobs["close"]["body"] == {"task": "shop.tasks.close_order", "args": [42],
                                     "kwargs": {}, "priority": 50, "run_after": None}
    refused = enqueued["refused"]
    assert "Queue 'nope' is not valid for backend" in refused["queue_name"]
    assert refused["arguments"].startswith("task arguments must be JSON")
    ready = enqueued["ready"]
    assert (ready["status"], ready["attempts"], ready["finished"]) == ("READY", 0, False)
    assert ready["return_value_error"] == "Task has not finished yet"

    # the worker ran them all, higher priorities first
    assert ran == ["high", "mid", "low"]
    assert "shop.tasks.PaymentDeclined: order 2" in worked  # the worker logs the dead job

    # results, read from another process
    expected = {"close": {"order": 42, "attempt": 1}, "receipt": {"order": 42,
                "sent_to": "ada@example.com"}, "stock": 8, "charge_ok": 500,
                "view_close": {"order": 7, "attempt": 1},
                "view_receipt": {"order": 7, "sent_to": "ada@example.com"},
                "probe_high": "high"}
    for name, value in expected.items():
        found = read[name]
        assert (found["status"], found["return_value"], found["attempts"]) == (
            "SUCCESSFUL", value, 1), name
        times = found["times"]
        assert times["enqueued_at"] <= times["started_at"] <= times["finished_at"], name
    assert read["receipt"]["times"]["started_at"] >= enqueued["run_after"]
    assert (read["close"]["task"], read["close"]["queue_name"], read["close"]["priority"],
            read["close"]["args"]) == ("shop.tasks.close_order", "default", 50, [42])
    assert read["view_receipt"]["priority"] == -10
    assert read["close_via_task"]["return_value"] == {"order": 42, "attempt": 1}
    assert read["stock_async"]["return_value"] == 8

    failed = read["charge_bad"]
    assert (failed["status"], failed["finished"], failed["args"]) == ("FAILED", True,
                                                                      [2, 500_000])
    assert failed["return_value_error"] == "Task failed"
    ((path, text),) = failed["errors"]
    assert path == failed["exception_class"] == "shop.tasks.PaymentDeclined"
    assert "500000 is over the card's limit" in text and "shop/tasks.py" in text
    assert failed["times"]["finished_at"] is not None

    retried = read["retried"]
    assert (retried["status"], retried["attempts"], retried["finished"]) == ("READY", 1, False)
    assert retried["errors"] == []  # streamdelay keeps a job's error with its dead letter
    assert read["unknown"] == "TaskResultDoesNotExist"
    assert read["refresh"]["before"] == "READY"
    assert read["refresh"]["after"]["status"] == "SUCCESSFUL"
    assert read["refresh"]["after"]["return_value"] == {"order": 8,
                                                        "sent_to": "alan@example.com"}


def test_integrations_page_shows_the_example_project_as_it_is() -> None:
    """docs/integrations.md shows the shop's files as they are in docs/examples/django_site
    (the generic check of docs/examples/*.py does not look into subfolders)."""
    page = (ROOT / "docs" / "integrations.md").read_text()
    blocks = re.findall(r"<!-- example: (django_site/[\w./-]+) -->\n```python\n(.*?)```", page,
                        re.DOTALL)
    assert {name for name, _ in blocks} == {"django_site/site_config/settings.py",
                                            "django_site/shop/tasks.py",
                                            "django_site/shop/views.py"}
    for name, code in blocks:
        assert code == (ROOT / "docs" / "examples" / name).read_text(), name
