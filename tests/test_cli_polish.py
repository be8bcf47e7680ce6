"""The CLI as a new user meets it: bare help, error lines that name the command, the past
tolerance of --at, durations in the units typed, enqueue --backoff / --format, dead list
--limit help, stats --watch in a pipe, the README quick start, ``JobInfo.ttr_ms``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.codec import Blob, decode_blob, parse_record
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.redis_server import RedisServer, read_until
from tests.test_cli import ROOT, assert_one_line_error, cli

pytestmark = pytest.mark.timeout(90)


def test_bare_streamdelay_prints_its_help_as_usage_text() -> None:
    bare, helped = cli(), cli("--help")
    assert bare.returncode == 0 and bare.stderr == ""
    assert bare.stdout == helped.stdout and bare.stdout.startswith("Usage: streamdelay")
    assert len(bare.stdout.splitlines()) > 10 and "\n  enqueue " in bare.stdout
    group = cli("dead")
    assert group.returncode == 0 and group.stdout.startswith("Usage: streamdelay dead")


@pytest.mark.parametrize(("args", "code", "path"), [
    (["enqueue", "q", "t", "{}", "--ttr", "99999d"], 2, "streamdelay enqueue"),
    (["get", "q", "x", "--url", "redis://127.0.0.1:1/0"], 1, "streamdelay get"),
    (["dead", "list", "q", "--url", "redis://127.0.0.1:1/0"], 1, "streamdelay dead list"),
    (["enqueue", "q", "t", "nope"], 2, "streamdelay enqueue"),
    (["stats"], 2, "streamdelay stats"),
])
def test_every_error_names_the_command_and_a_usage_error_its_help(args: list[str], code: int,
                                                                 path: str) -> None:
    result = cli(*args)
    assert_one_line_error(result, code)
    line = result.stderr.strip()
    assert line.startswith(f"{path}: error: "), line
    # the help helps with a usage error (2), not with an unreachable Redis (1)
    assert line.endswith(f"(see '{path} --help')") is (code == 2), line


@pytest.mark.parametrize(("option", "typed", "shown"), [
    ("--ttr", "99999d", "ttr: 99999d is out of range [1s, 7d]"),
    ("--ttr", "500ms", "ttr: 500ms is out of range [1s, 7d]"),
    ("--delay", "400000d", "delay: 400000d is out of range [0s, 3650d]"),
    ("--delay", "100000h", "delay: 100000h is out of range [0s, 3650d]"),
])
def test_durations_in_errors_are_in_the_units_typed(option: str, typed: str, shown: str) -> None:
    result = cli("enqueue", "q", "t", "{}", option, typed)
    assert_one_line_error(result, 2)
    assert shown in result.stderr and "e+" not in result.stderr


def test_an_at_beyond_the_past_tolerance_names_it_and_says_what_to_do(redis_url: str) -> None:
    name = "polish-at"
    for args in (["enqueue", name, "t", "{}", "--at", "2020-01-01T00:00:00Z"],
                 ["enqueue", name, "t", "{}", "--at", "1577836800"]):
        result = cli(*args, url=redis_url)
        assert_one_line_error(result, 2)
        assert "is more than 1h in the past (the queue's past_tolerance)" in result.stderr
        assert "give a later --at, or --delay 0" in result.stderr
    assert "1577836800 (epoch seconds)" in result.stderr
    assert cli("enqueue", name, "t", "{}", "--id", "r1", url=redis_url).returncode == 0
    moved = cli("reschedule", name, "r1", "--at", "2020-01-01T00:00:00Z", url=redis_url)
    assert_one_line_error(moved, 2)
    assert moved.stderr.startswith("streamdelay reschedule: error: --at: 2020-01-01")
    with pytest.raises(sd.ValidationError, match="past_tolerance"):
        sd.Queue(name, url=redis_url).enqueue("t", at=1577836800)


def _blob(url: str, queue: str, job_id: str) -> Blob:
    raw = redis.Redis.from_url(url).hget(PartitionKeys(queue, partition_of(job_id, 1)).jobs,
                                         job_id)
    return decode_blob(parse_record(raw).blob)


def test_enqueue_takes_a_backoff_and_a_body_format(redis_url: str) -> None:
    name = "polish-enqueue"
    listed = cli("enqueue", name, "t", '{"a": 1}', "--id", "b1", "--backoff", "10s,1m,5m",
                 url=redis_url)
    assert listed.returncode == 0, listed.stderr
    assert _blob(redis_url, name, "b1").schedule == [10.0, 60.0, 300.0]
    expo = cli("enqueue", name, "t", '{"a": 1}', "--id", "b2", "--backoff", "2s/10m",
               "--format", "msgpack", url=redis_url)
    assert expo.returncode == 0, expo.stderr
    blob = _blob(redis_url, name, "b2")
    assert (blob.base, blob.cap, blob.fmt) == (2.0, 600.0, "m")
    assert _blob(redis_url, name, "b1").fmt == "j"
    got = json.loads(cli("get", name, "b2", "--json", url=redis_url).stdout)
    assert got["body"] == {"a": 1} and got["ttr_ms"] == 60_000 and got["ttr"] == 60.0
    for bad in ("1s,x", "2s/", "-1s"):
        result = cli("enqueue", name, "t", "{}", "--backoff", bad, url=redis_url)
        assert_one_line_error(result, 2)
        assert "--backoff" in result.stderr
    wrong = cli("enqueue", name, "t", "{}", "--format", "xml", url=redis_url)
    assert_one_line_error(wrong, 2)
    assert "--format" in wrong.stderr


def test_dead_list_limit_has_its_help() -> None:
    text = " ".join(cli("dead", "list", "--help").stdout.split())
    assert re.search(r"--limit INTEGER RANGE At most this many jobs, the oldest first\. "
                     r"\[default: 100; 1<=x<=100000\]", text), text


def test_stats_watch_in_a_pipe_prints_a_timestamp_per_refresh(redis_url: str) -> None:
    with sd.Queue("polish-watch", url=redis_url) as q:
        q.enqueue("t", 1, delay=60)
    env = {**os.environ, "STREAMDELAY_URL": redis_url,
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "streamdelay", "stats", "polish-watch",
                             "--watch", "--interval", "200ms"], stdout=subprocess.PIPE,
                            text=True, env=env)
    first = read_until(proc.stdout, "queue polish-watch")  # type: ignore[arg-type]  # started
    try:
        out, _ = proc.communicate(timeout=2.0)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    out = first + out
    stamps = re.findall(r"^--- (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}) queue polish-watch$",
                        out, re.M)
    tables = out.count("TOPIC  GROUP")
    assert len(stamps) >= 3 and tables in (len(stamps), len(stamps) - 1), out


def test_readme_quick_start_tells_the_order_of_events(own_redis: RedisServer,
                                                      tmp_path: Path) -> None:
    redis_url = own_redis.url
    readme = (ROOT / "README.md").read_text()
    (producer,) = [block for block in re.findall(r"```python\n(.*?)```", readme, re.S)
                   if 'reschedule("close-42", delay=60)' in block]
    after = readme.split(producer, 1)[1][:600]
    assert "About a minute after the producer ran" in after
    script = tmp_path / "producer.py"
    script.write_text(producer)
    name = "orders"
    env = {**os.environ, "STREAMDELAY_URL": redis_url, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    with sd.Queue(name, url=redis_url) as q:
        info = q.get("close-42")
        seconds, micros = q.client.time()
    assert info is not None and info.state == "delayed"
    left = info.due - (int(seconds) * 1000 + int(micros) // 1000)
    assert 55_000 < left <= 60_000  # due a minute on, not in 2 s
