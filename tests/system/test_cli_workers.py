"""``streamdelay workers QUEUE [NAME] [--json]`` with real worker processes: every line within
80 columns (a long worker name and many running jobs), the JSON form, one worker by name, and
exit 1 with one clear line for a name no live worker has (docs/cli.md#workers)."""

from __future__ import annotations

import json

import streamdelay as sd
from tests.system.test_cli import assert_one_line_error, cli, cli_many
from tests.system.test_fleet_workers import fleet_worker, listed
from tests.system.test_metrics_prometheus import running, wait_for

LONG_NAME = "billing-workers-eu-west-1-production-host-0042-31337-ab12cd34ef56"


def test_workers_command_fits_80_columns_and_names_an_unknown_worker(
        redis_url: str, queue_name: str) -> None:
    short = fleet_worker(redis_url, queue_name)
    long = fleet_worker(redis_url, queue_name)
    with running(short, long), sd.Queue(queue_name, url=redis_url) as q:
        wait_for("both listed", lambda: len(listed(q)) == 2)
        ids = [q.enqueue("f.slow", {"ms": 60_000}, id=f"order-close-2026-11-26-{n:06d}").id
               for n in range(4)]
        wait_for("four jobs shown", lambda: sum(w.running_count for w in listed(q)) == 4)
        # a pull consumer with a long name shows up too
        q.reserve("p.topic", group="pullers", consumer=LONG_NAME, wait=0)
        table, as_json, missing = cli_many([
            ["workers", queue_name], ["workers", queue_name, "--json"],
            ["workers", queue_name, "no-such-worker"]], url=redis_url)
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        assert max(len(line) for line in lines) <= 80, table.stdout
        for job_id in ids:
            assert job_id in table.stdout
        assert LONG_NAME in table.stdout and "pull consumer" in table.stdout
        assert table.stdout.count("2/2 jobs") == 2
        rows = json.loads(as_json.stdout)
        assert {r["pid"] for r in rows} == {short.pid, long.pid, 0}
        assert sorted(i for r in rows for i in r["running"]) == sorted(ids)
        assert_one_line_error(missing, 1)
        assert "no live worker named 'no-such-worker'" in missing.stderr
        name = next(r["name"] for r in rows if r["pid"] == short.pid)
        one = cli("workers", queue_name, name, "--json", url=redis_url)
        assert one.returncode == 0 and json.loads(one.stdout)["pid"] == short.pid


def test_workers_of_a_queue_nobody_used(redis_url: str, queue_name: str) -> None:
    assert_one_line_error(cli("workers", queue_name, url=redis_url), 1)
