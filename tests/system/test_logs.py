"""Log lines of ``streamdelay worker``: ``--log-format json`` read from a real worker process,
per-job debug lines, warnings with the job's fields, secrets masked; no handler on import."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.telemetry import JsonFormatter
from tests.support.apps.log_worker_app import SECRET
from tests.support.redis_server import wait_until

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.apps.log_worker_app:worker"


def run_worker(url: str, queue_name: str, *options: str, until: Any) -> list[str]:
    """Run ``streamdelay worker`` with ``options`` until ``until()`` holds; its stderr lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDELAY_")}
    env.update(PYTHONPATH=str(ROOT), LOG_APP_QUEUE=queue_name)
    proc = subprocess.Popen([sys.executable, "-m", "streamdelay", "worker", APP, "--url", url,
                             *options], stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    reached = False
    try:
        reached = wait_until(until, timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert reached and proc.returncode == 0, err
    return err.splitlines()


def settled(queue: sd.Queue, done: list[str], dead: list[str]) -> Any:
    """A check: every job of ``done`` is done (or gone) and every one of ``dead`` is dead."""
    def check() -> bool:
        infos = {job_id: queue.get(job_id) for job_id in done + dead}
        return (all(infos[i] is None or infos[i].state == "done" for i in done)  # type: ignore[union-attr]
                and all(infos[i] is not None and infos[i].state == "dead" for i in dead))  # type: ignore[union-attr]
    return check


@pytest.fixture
def jobs(queue: sd.Queue) -> tuple[list[str], list[str]]:
    """Three jobs that succeed and one that fails twice (then is dead)."""
    done = [queue.enqueue("log.ok", {"n": n}).id for n in range(3)]
    dead = [queue.enqueue("log.fail", {}, max_attempts=2, backoff=[0.05]).id]
    return done, dead


def test_json_lines_at_debug_carry_every_job_field(
    queue: sd.Queue, redis_url: str, jobs: tuple[list[str], list[str]]
) -> None:
    done, dead = jobs
    lines = run_worker(redis_url, queue.config.name, "--log-format", "json", "--log-level",
                       "debug", until=settled(queue, done, dead))
    entries = [json.loads(line) for line in lines]  # every stderr line is one JSON object
    for entry in entries:
        assert {"ts", "level", "event", "logger"} <= entry.keys(), entry
        assert entry["ts"].endswith("Z") and entry["level"] in ("debug", "info", "warning",
                                                                 "error")
    about = {job_id: [e for e in entries if e.get("job_id") == job_id] for job_id in done + dead}
    for job_id in done:
        started, handled = about[job_id]
        assert (started["event"], handled["event"]) == ("job started", "job handled")
        for entry in (started, handled):
            assert entry["level"] == "debug"
            assert entry["queue"] == queue.config.name and entry["topic"] == "log.ok"
            assert entry["attempt"] == 1
            assert -1000 < entry["lateness_ms"] < 20_000  # due at enqueue: small, server clock
        assert "duration_ms" not in started and handled["duration_ms"] >= 0
        assert handled["outcome"] == "handled"
    events = [(e["event"], e.get("attempt")) for e in about[dead[0]]]
    assert events == [("job started", 1), ("job retried", 1), ("job started", 2),
                      (events[3][0], 2)]
    dead_line = about[dead[0]][3]
    assert dead_line["level"] == "warning" and " is dead: RuntimeError" in dead_line["event"]
    assert dead_line["topic"] == "log.fail" and dead_line["duration_ms"] >= 0
    assert "lateness_ms" in dead_line
    retried = about[dead[0]][1]
    assert retried["outcome"] == "retried" and "***" in retried["error"]
    text = "\n".join(lines)
    assert SECRET not in text and "***" in text  # masked in every field


def test_json_at_info_has_no_per_job_lines_but_warnings_keep_fields(
    queue: sd.Queue, redis_url: str, jobs: tuple[list[str], list[str]]
) -> None:
    done, dead = jobs
    lines = run_worker(redis_url, queue.config.name, "--log-format", "json",
                       until=settled(queue, done, dead))
    entries = [json.loads(line) for line in lines]
    assert not [e for e in entries if e["level"] == "debug"]
    assert any(e["event"].startswith("worker ") and e["level"] == "info" for e in entries)
    (dead_line,) = [e for e in entries if "job_id" in e]
    assert dead_line["job_id"] == dead[0] and dead_line["queue"] == queue.config.name
    assert dead_line["topic"] == "log.fail" and dead_line["level"] == "warning"
    assert SECRET not in "\n".join(lines)


def test_text_format_appends_the_fields(
    queue: sd.Queue, redis_url: str, jobs: tuple[list[str], list[str]]
) -> None:
    done, dead = jobs
    lines = run_worker(redis_url, queue.config.name, "--log-level", "debug",
                       until=settled(queue, done, dead))
    started = [line for line in lines if f"job started queue={queue.config.name}" in line]
    assert len(started) == 5, lines  # three ok, two attempts of the failing job
    assert all(" DEBUG streamdelay.worker: " in line and "lateness_ms=" in line
               for line in started)
    assert not [line for line in lines if line.startswith("{")]
    assert SECRET not in "\n".join(lines)


def test_a_bad_log_format_is_a_usage_error(redis_url: str) -> None:
    result = subprocess.run([sys.executable, "-m", "streamdelay", "worker", APP, "--log-format",
                             "xml"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "--log-format" in result.stderr


def test_importing_streamdelay_installs_no_log_handler() -> None:
    code = ("import logging, streamdelay, streamdelay.telemetry, streamdelay.cli;"
            "names = [n for n in logging.root.manager.loggerDict if n.startswith('streamdelay')];"
            "loggers = [logging.root, *(logging.getLogger(n) for n in names)];"
            "print(sum(len(x.handlers) for x in loggers),"
            " streamdelay.telemetry.tracing._otel is None)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=60, check=True)
    assert result.stdout.split() == ["0", "True"]  # and no OpenTelemetry use yet


def test_the_json_formatter_masks_and_encodes_whatever_it_gets() -> None:
    formatter = JsonFormatter(["s3cret"])
    record = logging.LogRecord("streamdelay.worker", logging.ERROR, __file__, 1,
                               "login with password=%s to %s", ("s3cret", "redis://u:pw@h/0"),
                               None)
    record.__dict__.update(job_id="j1", attempt=2, odd=object(), note="token=abc s3cret")
    entry = json.loads(formatter.format(record))
    assert entry["event"] == "login with password=*** to redis://u:***@h/0"
    assert entry["note"] == "token=*** ***" and entry["job_id"] == "j1" and entry["attempt"] == 2
    assert entry["odd"].startswith("<object object")
    assert time.strptime(entry["ts"][:19], "%Y-%m-%dT%H:%M:%S")


def test_dispatch_logs_json_lines(queue: sd.Queue, redis_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDELAY_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "streamdelay", "dispatch", queue.config.name,
                             "--url", redis_url, "--log-format", "json"],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the start line: the dispatcher is up
    queue.enqueue("t", {})
    assert wait_until(lambda: getattr(queue.stats().topics.get("t"), "ready", 0) == 1,
                      timeout=30)
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=30)
    entries = [json.loads(line) for line in [first, *rest.splitlines()]]
    assert entries[0]["event"].startswith(f"dispatching queue {queue.config.name}")
    assert entries[-1]["event"] == "dispatcher stopped: promoted 1 job(s)"
    assert all(e["logger"] == "streamdelay.cli" and e["level"] == "info" for e in entries)
