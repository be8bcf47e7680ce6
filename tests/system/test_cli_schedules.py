"""``streamdelay schedule add|list|remove|pause|resume|next`` on a real redis-server (run
in-process through the same entry point as the console script: one interpreter start-up)."""

from __future__ import annotations

import json

import pytest

from streamdelay.cli.commands import cli
from streamdelay.cli.exit_codes import run_cli


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_schedule_commands(redis_url: str, queue_name: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    u = ["--url", redis_url]
    code, out, _ = run(capsys, "schedule", "add", queue_name, "nightly", "report.build",
                       '{"kind": "daily"}', "--cron", "30 2 * * *", "--tz", "Europe/Berlin",
                       "--missed", "once", *u)
    assert code == 0 and out.startswith("declared nightly; next tick ")
    code, out, _ = run(capsys, "schedule", "add", queue_name, "nightly", "report.build",
                       '{"kind": "daily"}', "--cron", "30 2 * * *", "--tz", "Europe/Berlin",
                       "--missed", "once", *u)
    assert code == 0 and out.startswith("unchanged nightly")
    assert run(capsys, "schedule", "add", queue_name, "hb", "ping", "--every", "15s", *u)[0] == 0
    code, out, _ = run(capsys, "schedule", "list", queue_name, *u)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["NAME", "TOPIC", "STATE"]
    assert lines[1].startswith("hb ") and "every 15s" in lines[2]  # the spec under its row
    assert lines[3].startswith("nightly ")
    assert "cron 30 2 * * * (Europe/Berlin)" in lines[4] and "missed ticks: once" in lines[4]
    code, out, _ = run(capsys, "schedule", "next", queue_name, "nightly", "--count", "3",
                       "--json", *u)
    ticks = json.loads(out)
    assert code == 0 and len(ticks) == 3 and ticks[1] - ticks[0] in (82_800_000, 86_400_000,
                                                                      90_000_000)
    assert run(capsys, "schedule", "pause", queue_name, "hb", *u)[1] == "paused hb\n"
    assert run(capsys, "schedule", "pause", queue_name, "hb", *u)[1] == "hb was already paused\n"
    assert run(capsys, "schedule", "next", queue_name, "hb", *u)[1] == "hb is paused\n"
    listed = json.loads(run(capsys, "schedule", "list", queue_name, "--json", *u)[1])
    assert [(s["name"], s["paused"]) for s in listed] == [("hb", True), ("nightly", False)]
    assert listed[1]["body"] == {"kind": "daily"} and listed[1]["missed"] == "once"
    assert run(capsys, "schedule", "resume", queue_name, "hb", *u)[1] == "resumed hb\n"
    assert run(capsys, "schedule", "remove", queue_name, "hb", *u)[1] == "removed hb\n"
    assert run(capsys, "schedule", "remove", queue_name, "hb", *u)[1] == "no schedule hb\n"


@pytest.mark.parametrize("args, field", [
    (["--every", "500ms"], "every"),
    ([], "cron"),
    (["--cron", "99 * * * *"], "cron"),
    (["--cron", "* * * * *", "--tz", "Nowhere/Else"], "tz"),
])
def test_bad_schedule_input_is_one_line_and_exit_2(
        redis_url: str, queue_name: str, capsys: pytest.CaptureFixture[str],
        args: list[str], field: str) -> None:
    code, out, err = run(capsys, "schedule", "add", queue_name, "x", "t", *args,
                         "--url", redis_url)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"error: {field}: " in err


def test_unknown_schedule_fails_with_exit_1(redis_url: str, queue_name: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "schedule", "add", queue_name, "a", "t", "--every", "1m",
               "--url", redis_url)[0] == 0
    code, _, err = run(capsys, "schedule", "next", queue_name, "zzz", "--url", redis_url)
    assert code == 1 and "no schedule 'zzz'" in err
