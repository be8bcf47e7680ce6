"""The workflow faces of the CLI (docs/workflows.md): ``enqueue --after``, ``get`` showing a
job's parents, ``stats`` with a WAITING column, ``batch info``; bad input is one line, exit 2."""

from __future__ import annotations

import json

import streamdelay as sd
from tests.system.test_cli import assert_one_line_error, cli, field


def test_enqueue_after_get_stats_and_batch_info(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p1", delay=60)
        q.batch([sd.JobSpec("t", id="m1")], id="b1", on_complete=sd.JobSpec("t"))
    made = cli("enqueue", queue_name, "t", "{}", "--id", "kid", "--after", "p1", "--after", "m1",
               url=redis_url)
    assert made.returncode == 0, made.stderr
    assert field(made.stdout, "state") == "waiting"
    shown = cli("get", queue_name, "kid", url=redis_url)
    assert field(shown.stdout, "parents") == "m1 (pending), p1 (pending)"
    member = cli("get", queue_name, "m1", url=redis_url)
    assert field(member.stdout, "children") == "batch:b1, kid"
    stats = cli("stats", queue_name, url=redis_url).stdout.splitlines()
    assert stats[0].split()[:3] == ["TOPIC", "GROUP", "WAITING"]
    assert stats[1].split()[2] == "1"
    info = cli("batch", "info", queue_name, "b1", url=redis_url)
    assert field(info.stdout, "state") == "running" and field(info.stdout, "members") == "1"
    assert field(info.stdout, "on_complete") == "b1@2"
    as_json = json.loads(cli("batch", "info", queue_name, "b1", "--json", url=redis_url).stdout)
    assert as_json["pending"] == 1
    assert cli("batch", "info", queue_name, "nope", url=redis_url).returncode == 1
    unknown = cli("enqueue", queue_name, "t", "{}", "--after", "ghost", url=redis_url)
    assert_one_line_error(unknown, 2)
    assert "after" in unknown.stderr


def test_enqueue_after_with_job_options(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p1", delay=60)
    made = cli("enqueue", queue_name, "t", "{}", "--id", "kid", "--after", "p1",
               "--priority", "9", "--key", "tenant-1", "--expires", "10m", url=redis_url)
    assert made.returncode == 0, made.stderr
    assert field(made.stdout, "state") == "waiting"
    with sd.Queue(queue_name, url=redis_url) as q:
        info = q.get("{tenant-1}kid")
        assert info is not None and (info.state, info.priority, info.key) == (
            "waiting", 9, "tenant-1")


def test_jobs_state_waiting(redis_url: str, queue_name: str) -> None:
    """``streamdelay jobs QUEUE --state waiting`` lists the jobs waiting for their parents."""
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p1", delay=60)
        q.enqueue("t", id="kid-a", after=["p1"])
        q.enqueue("u", id="kid-b", after=["p1"])
    listed = cli("jobs", queue_name, "--state", "waiting", url=redis_url)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == ["kid-a", "kid-b"]
    assert "after parents" in lines[1] and "p1" not in listed.stdout
    only = cli("jobs", queue_name, "--state", "waiting", "--topic", "u", url=redis_url)
    assert [line.split()[0] for line in only.stdout.splitlines()[1:]] == ["kid-b"]
