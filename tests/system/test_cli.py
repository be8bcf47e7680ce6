"""The ``streamdelay`` command, driven as a real subprocess against real redis-server processes."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.cli.output import utc_seconds
from streamdelay.protocol.keys import partition_keys, partition_of
from tests.support.promoting import promote_due
from tests.support.redis_server import RedisServer, free_port, read_until, wait_until

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.support.apps.cli_worker_app"
COMMANDS = [[], ["worker"], ["dispatch"], ["enqueue"], ["get"], ["cancel"], ["reschedule"],
            ["stats"], ["claim"], ["dead"], ["dead", "list"], ["dead", "replay"],
            ["dead", "purge"], ["demo"], ["events"]]


def cli_env(url: str | None, **extra: str) -> dict[str, str]:
    """The test environment: STREAMDELAY_URL only when given, the repo on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMDELAY_", "CLI_APP_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if url is not None:
        env["STREAMDELAY_URL"] = url
    env.update(extra)
    return env


def command(*args: str) -> list[str]:
    """argv for ``python -m streamdelay ARGS``."""
    return [sys.executable, "-m", "streamdelay", *args]


def cli(*args: str, url: str | None = None, timeout: float = 60
        ) -> subprocess.CompletedProcess[str]:
    """Run one CLI command to its end."""
    return subprocess.run(command(*args), capture_output=True, text=True, env=cli_env(url),
                          cwd=ROOT, timeout=timeout)


def cli_many(runs: Sequence[Sequence[str]], url: str | None = None, **extra: str
             ) -> list[subprocess.CompletedProcess[str]]:
    """Run several independent CLI commands at once (saves interpreter start-up time)."""
    procs = [subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=cli_env(url, **extra), cwd=ROOT) for args in runs]
    done = []
    for args, proc in zip(runs, procs, strict=True):
        out, err = proc.communicate(timeout=60)
        done.append(subprocess.CompletedProcess(list(args), proc.returncode, out, err))
    return done


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> None:
    """Exit code ``code``, exactly one line on stderr, no traceback."""
    assert result.returncode == code, (result.args, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def field(text: str, name: str) -> str:
    """The value of ``name`` in the ``key  value`` output of enqueue/get."""
    match = re.search(rf"^{name}\s+(.*)$", text, re.MULTILINE)
    assert match, text
    return match.group(1)


@pytest.fixture(scope="module")
def shared_redis() -> Iterator[RedisServer]:
    """This module's own redis-server (the CLI tests leave queues behind; others count keys)."""
    with RedisServer() as server:
        yield server


@pytest.fixture
def acl_url(shared_redis: RedisServer) -> Iterator[tuple[str, str]]:
    """(URL with a password, the password) of a user created for this test on the server."""
    user, password = f"u{uuid.uuid4().hex[:8]}", f"pw{uuid.uuid4().hex}"
    client = shared_redis.client()
    client.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")
    yield f"redis://{user}:{password}@127.0.0.1:{shared_redis.port}/0", password
    client.execute_command("ACL", "DELUSER", user)
    client.close()


def test_every_command_has_help_with_an_example() -> None:
    results = cli_many([[*args, "--help"] for args in COMMANDS])
    for result in results:
        assert result.returncode == 0, (result.args, result.stderr)
        assert "Example" in result.stdout and "streamdelay " in result.stdout, result.args
        assert "Usage: streamdelay" in result.stdout
    assert "--url" in results[COMMANDS.index(["stats"])].stdout
    assert "STREAMDELAY_URL" in results[COMMANDS.index(["enqueue"])].stdout


def test_enqueue_get_reschedule_cancel(redis_url: str, queue: sd.Queue) -> None:
    name = queue.name
    first = cli("enqueue", name, "order.close", '{"order_id": 42}', "--delay", "30s",
                "--id", "close-42", "--ttr", "2m", "--max-attempts", "4", "--header", "k=v",
                url=redis_url)
    assert first.returncode == 0, first.stderr
    assert field(first.stdout, "id") == "close-42"
    assert field(first.stdout, "outcome") == "new job"
    info = queue.get("close-42")
    assert info is not None and info.body == {"order_id": 42} and info.headers == {"k": "v"}
    assert info.due - info.created == 30_000 and info.ttr == 120 and info.max_attempts == 4
    assert f"({info.due})" in field(first.stdout, "due")

    again = cli("enqueue", name, "order.close", "{}", "--id", "close-42", "--json", url=redis_url)
    assert json.loads(again.stdout) == {"id": "close-42", "due": info.due, "created": False,
                                        "state": "delayed"}

    shown = cli("get", name, "close-42", "--json", url=redis_url)
    assert shown.returncode == 0
    doc = json.loads(shown.stdout)
    assert (doc["state"], doc["body"], doc["due"], doc["attempts"]) == (
        "delayed", {"order_id": 42}, info.due, 0)
    assert field(cli("get", name, "close-42", url=redis_url).stdout, "state") == "delayed"

    moved = cli("reschedule", name, "close-42", "--delay", "5m", url=redis_url)
    assert moved.returncode == 0 and moved.stdout.startswith("rescheduled close-42")
    later = queue.get("close-42")
    assert later is not None and later.due >= info.due + 270_000

    target = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=2)
    at = cli("reschedule", name, "close-42", "--at", target.isoformat().replace("+00:00", "Z"),
             url=redis_url)
    assert at.returncode == 0, at.stderr
    assert queue.get("close-42").due == int(target.timestamp() * 1000)  # type: ignore[union-attr]

    assert cli("cancel", name, "close-42", url=redis_url).stdout.strip() == "cancelled close-42"
    assert queue.get("close-42") is None


def test_usage_errors_exit_2_with_one_clear_line(redis_url: str, queue_name: str) -> None:
    cases = {
        "duration": ["enqueue", queue_name, "t", "{}", "--delay", "5 minutes"],
        "JSON": ["enqueue", queue_name, "t", "{not json"],
        "topic": ["enqueue", queue_name, "bad topic!", "{}"],
        "id": ["get", queue_name, "no spaces allowed"],
        "not both": ["enqueue", queue_name, "t", "{}", "--delay", "1s", "--at", "2030-01-01"],
        "ISO": ["enqueue", queue_name, "t", "{}", "--at", "next tuesday"],
        "past": ["enqueue", queue_name, "t", "{}", "--at", "2001-01-01T00:00:00Z"],
        "--delay or --at": ["reschedule", queue_name, "some-id"],
        "Missing argument": ["enqueue", queue_name],
        "No such command": ["frobnicate"],
        "name": ["stats", "bad queue name!"],
        "cannot import": ["worker", "tests.support.apps.no_such_module:worker"],
        "not a streamdelay Worker": ["worker", f"{APP}:not_a_worker"],
        "min-idle": ["claim", queue_name, "--group", "g", "--min-idle", "soon"],
        "url": ["stats", queue_name, "--url", "http://127.0.0.1:1"],
    }
    results = cli_many(list(cases.values()), url=redis_url)
    for expected, result in zip(cases, results, strict=True):
        assert_one_line_error(result, 2)
        assert expected in result.stderr, (expected, result.stderr)


def test_unknown_job_and_missing_group_exit_1(redis_url: str, queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="exists", delay=60)
    name = queue.name
    runs = [["get", name, "nope"], ["cancel", name, "nope"],
            ["reschedule", name, "nope", "--delay", "1m"], ["dead", "list", name, "--id", "exists"],
            ["dead", "replay", name, "--id", "nope"], ["dead", "purge", name, "--id", "nope"],
            ["claim", name, "--group", "nobody"]]
    results = cli_many(runs, url=redis_url)
    for result in results[:-1]:
        assert_one_line_error(result, 1)
        assert "'nope'" in result.stderr or "'exists'" in result.stderr
    assert_one_line_error(results[-1], 1)
    assert "group" in results[-1].stderr and "nobody" in results[-1].stderr
    assert queue.get("exists") is not None


def test_unreachable_redis_fails_fast_with_one_masked_line() -> None:
    url = f"redis://admin:topsecret42@127.0.0.1:{free_port()}/0"
    runs = [["stats", "q"], ["enqueue", "q", "t", "{}"], ["get", "q", "x"],
            ["dead", "list", "q"], ["claim", "q", "--group", "g"]]
    started = time.monotonic()
    results = cli_many(runs, url=url)
    elapsed = time.monotonic() - started
    for result in results:
        assert_one_line_error(result, 1)
        assert "cannot reach Redis" in result.stderr
        assert "topsecret42" not in result.stderr and "admin:***@" in result.stderr
    assert elapsed < 20, elapsed  # the commands give up after ~3 s (generous margin: loaded CI)


def test_silent_redis_fails_within_seconds_with_one_masked_line() -> None:
    """A host that accepts the connection and never answers (a hung server, a black hole)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        url = f"redis://admin:quietSecret5@127.0.0.1:{silent.getsockname()[1]}/0"
        started = time.monotonic()
        results = cli_many([["stats", "q", "--watch"], ["enqueue", "q", "t", "{}"],
                            ["claim", "q", "--group", "g"]], url=url)
        elapsed = time.monotonic() - started
    for result in results:
        assert_one_line_error(result, 1)
        assert "cannot reach Redis at redis://admin:***@127.0.0.1" in result.stderr
        assert "quietSecret5" not in result.stderr
    assert elapsed < 20, elapsed  # ~5 s each (2 s socket timeout, 3 s retry budget), in parallel


def test_wrong_password_is_one_masked_line(acl_url: tuple[str, str]) -> None:
    url, password = acl_url
    wrong = url.replace(password, "not-the-password")
    result = cli("stats", "q", url=wrong)
    assert_one_line_error(result, 1)
    assert "not-the-password" not in result.stderr and "authentication failed" in result.stderr
    with sd.Queue("q", url=url) as queue:  # stats of a queue nobody used: "no such queue"
        queue.enqueue("t", 1, delay=600)
    ok = cli("stats", "q", "--url", url)
    assert ok.returncode == 0 and password not in ok.stdout + ok.stderr


def test_wrong_password_stops_worker_and_dispatch_at_once(acl_url: tuple[str, str]) -> None:
    """A refused password will not heal: long-running commands fail at start, not retry forever."""
    url, password = acl_url
    wrong = url.replace(password, "not-the-password")
    started = time.monotonic()
    results = cli_many([["worker", APP], ["dispatch", "q"]], url=wrong)
    assert time.monotonic() - started < 30
    for result in results:
        assert result.returncode == 1, result.stderr[-500:]
        assert "authentication failed" in result.stderr
        assert "not-the-password" not in result.stderr
        assert "Traceback" not in result.stderr


def test_stats_json_lag_and_watch(redis_url: str, queue: sd.Queue) -> None:
    queue.enqueue("a.topic", {}, id="due-now")  # no dispatcher runs: it waits, so lag grows
    queue.enqueue("b.topic", {}, id="later", delay=600)
    time.sleep(0.2)
    doc = json.loads(cli("stats", queue.name, "--json", url=redis_url).stdout)
    assert doc["topics"]["a.topic"]["delayed"] == 1 and doc["topics"]["a.topic"]["lag_ms"] >= 150
    assert doc["topics"]["b.topic"]["lag_ms"] == 0 and doc["total"]["delayed"] == 2
    text = cli("stats", queue.name, url=redis_url).stdout
    assert "LAG" in text.splitlines()[0] and re.search(r"^TOTAL\s+2\s+0\s+0\s+0", text, re.M)

    watcher = subprocess.Popen(command("stats", queue.name, "--watch", "--interval", "250ms"),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=cli_env(redis_url), cwd=ROOT)
    first = read_until(watcher.stdout, "LAG")  # type: ignore[arg-type]  # the first table
    time.sleep(1.0)  # three more refreshes of 250 ms
    watcher.send_signal(signal.SIGINT)
    out, err = watcher.communicate(timeout=20)
    out = first + out
    assert watcher.returncode == 0, err
    assert out.count("LAG") >= 3 and "Traceback" not in err


def _reserve_by_ghost(queue: sd.Queue, topic: str, job_id: str, group: str) -> None:
    """Leave ``job_id`` reserved by a consumer that will never come back."""
    worker = sd.Worker(queue, group=group, dispatch=False)
    worker.handler(topic)(lambda job: None)
    queue.enqueue(topic, {}, id=job_id, ttr=1)
    keys = partition_keys(queue.name, 1)[0]

    async def register_and_promote() -> None:
        await worker.register()
        await worker.client.aclose()
        dispatcher = sd.Dispatcher(queue.config)
        await promote_due(dispatcher, keys)
        await dispatcher.close()

    asyncio.run(register_and_promote())
    assert queue.client.xreadgroup(group, "ghost", {keys.stream(topic): ">"}, count=10)


def test_claim_hands_over_then_requeues_stuck_jobs(redis_url: str, queue: sd.Queue) -> None:
    _reserve_by_ghost(queue, "t", "stuck-1", "billing")
    time.sleep(0.3)
    handed = cli("claim", queue.name, "--group", "billing", "--min-idle", "250ms",
                 "--to", "rescuer", url=redis_url)
    assert handed.returncode == 0, handed.stderr
    assert "1 job(s) handed to consumer rescuer: stuck-1" in handed.stdout
    # ghost owns nothing now and was silent past --min-idle: gone, so removed from the group
    assert "removed 1 consumer(s) that were gone and owned nothing: ghost" in handed.stdout
    info = queue.get("stuck-1")
    assert info is not None and info.state == "reserved" and info.consumer == "rescuer"

    time.sleep(0.3)
    requeued = cli("claim", queue.name, "--group", "billing", "--topic", "t", "--min-idle",
                   "250ms", "--json", url=redis_url)
    assert json.loads(requeued.stdout)["moved"] == ["stuck-1"]
    assert json.loads(requeued.stdout)["removed"] == ["rescuer"]
    stream = partition_keys(queue.name, 1)[0].stream("t")
    assert queue.client.xinfo_consumers(stream, "billing") == []
    assert queue.stats().topics["t"].ready == 1 and queue.stats().topics["t"].reserved == 0
    nothing = cli("claim", queue.name, "--group", "billing", url=redis_url)
    assert nothing.returncode == 0 and "nothing to claim" in nothing.stdout


def test_dead_list_replay_purge(redis_url: str, queue: sd.Queue) -> None:
    for job_id in ("d1", "d2"):
        queue.enqueue("t", {"id": job_id}, id=job_id, max_attempts=1)
    worker = sd.Worker(queue)

    @worker.handler("t")
    def fail(job: sd.Job) -> None:
        raise RuntimeError("kaput")

    worker.run(until_idle=True)
    name = queue.name
    listed = cli("dead", "list", name, url=redis_url)
    assert listed.returncode == 0
    rows = listed.stdout.splitlines()
    assert rows[0].split() == ["ID", "TOPIC", "TRIES", "DEAD", "AT", "(UTC)"]
    assert {row.split()[0] for row in rows[1::2]} == {"d1", "d2"}
    assert "RuntimeError: kaput" in rows[2]  # the error on a line under its job
    one = json.loads(cli("dead", "list", name, "--id", "d1", "--json", url=redis_url).stdout)
    assert [(j["id"], j["attempts"]) for j in one] == [("d1", 1)]
    # when it died (its dead-letter entry), as the list shows it, not its due time
    died = {d.id: d.at for d in queue.dead_list()}
    assert one[0]["at"] == died["d1"] and died["d1"] > queue.get("d1").due  # type: ignore[union-attr]
    listed = cli("jobs", name, "--state", "dead", url=redis_url).stdout.splitlines()
    assert listed[0].split()[:4] == ["ID", "TOPIC", "DIED", "(UTC)"], listed
    assert utc_seconds(died["d1"]) in next(row for row in listed if row.startswith("d1 "))
    assert "died" in cli("get", name, "d1", url=redis_url).stdout

    replayed = cli("dead", "replay", name, "--id", "d1", "--delay", "1m", url=redis_url)
    assert replayed.stdout.strip() == "replayed 1 dead job(s)"
    info = queue.get("d1")
    assert info is not None and info.state == "delayed" and info.attempts == 0
    assert 55_000 <= info.due - queue.stats().now <= 60_000

    purged = cli("dead", "purge", name, "--topic", "t", url=redis_url)
    assert purged.stdout.strip() == "purged 1 dead job(s)"
    assert queue.get("d2") is None
    assert cli("dead", "list", name, url=redis_url).stdout.strip() == "no dead jobs"


def test_worker_runs_jobs_and_stops_cleanly_on_sigterm(
    acl_url: tuple[str, str], queue: sd.Queue, tmp_path: Path
) -> None:
    url, password = acl_url
    out = tmp_path / "handled.txt"
    for n in range(5):
        queue.enqueue("cli.echo", {"n": n}, id=f"e{n}", delay=0.1 * n)
    queue.enqueue("cli.slow", {"seconds": 1.5}, id="s1")
    proc = subprocess.Popen(
        command("worker", f"{APP}:worker", "--url", url, "--group", "override", "--concurrency",
                "3"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=cli_env(None, CLI_APP_QUEUE=queue.name, CLI_APP_OUT=str(out)))
    try:
        def lines() -> list[str]:
            return out.read_text().splitlines() if out.exists() else []

        assert wait_until(lambda: "start s1" in lines() and
                          sum(line.startswith("done e") for line in lines()) == 5, timeout=30)
        proc.send_signal(signal.SIGTERM)  # while s1 still runs: it must finish, then exit 0
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert sorted(lines()) == sorted([*(f"done e{n} 1" for n in range(5)), "start s1",
                                      "done s1 1"])
    assert {t.group for t in queue.stats().topics.values()} == {"override"}
    assert "concurrency 3" in err and "***@" in err and password not in err
    assert "Traceback" not in err


def test_worker_rides_out_unreachable_redis_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(command("worker", APP), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=cli_env(None, CLI_APP_OUT=str(tmp_path / "out.txt")))
    try:  # the signal comes once the worker says it retries (it then handles SIGTERM)
        early = read_until(proc.stderr, "retrying")  # type: ignore[arg-type]
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = early + err
    assert proc.returncode == 0, err
    assert "retrying" in err and "Traceback" not in err


def test_dispatch_moves_due_jobs_then_stops_on_sigterm(redis_url: str, queue: sd.Queue) -> None:
    queue.enqueue("t", {}, id="soon", delay=0.5)
    queue.enqueue("t", {}, id="much-later", delay=3600)
    proc = subprocess.Popen(command("dispatch", queue.name), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=cli_env(redis_url))
    try:
        assert wait_until(lambda: queue.get("soon").state == "ready",  # type: ignore[union-attr]
                          timeout=20)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "promoted 1 job(s)" in err
    assert queue.get("much-later").state == "delayed"  # type: ignore[union-attr]


def _ids_in_partition(partition: int, partitions: int, count: int) -> list[str]:
    ids = (f"p{n}" for n in range(10_000))
    return [i for i in ids if partition_of(i, partitions) == partition][:count]


def test_partitions_option_env_and_mismatch(redis_url: str, queue_name: str,
                                            tmp_path: Path) -> None:
    three = sd.Queue(queue_name, url=redis_url, partitions=3)
    far, mid = _ids_in_partition(2, 3, 2), _ids_in_partition(1, 3, 1)[0]
    for job_id in [*far, mid]:
        three.enqueue("t", {}, id=job_id, delay=600)
    name = queue_name
    runs = {
        "get": ["get", name, far[0], "--partitions", "3"],
        "cancel": ["cancel", name, far[1], "--partitions", "3"],
        "enqueue": ["enqueue", name, "t", "{}", "--id", "new-1", "--delay", "1d",
                    "--partitions", "3", "--json"],
        "reschedule": ["reschedule", name, mid, "--delay", "2h", "--partitions", "3"],
        "dead": ["dead", "list", name, "--partitions", "3"],
        "claim": ["claim", name, "--group", "g", "--partitions", "3"],
        "default": ["stats", name],
        "wrong": ["enqueue", name, "t", "{}", "--partitions", "2"],
        "zero": ["get", name, "x", "--partitions", "0"],
    }
    results = dict(zip(runs, cli_many(list(runs.values()), url=redis_url), strict=True))
    for key in ("get", "cancel", "enqueue", "reschedule", "dead"):
        assert results[key].returncode == 0, (key, results[key].stderr)
    assert field(results["get"].stdout, "state") == "delayed"
    assert three.get(far[1]) is None
    new = three.get("new-1")
    assert new is not None and new.due - new.created == 86_400_000
    moved = three.get(mid)
    assert moved is not None and 7_190_000 <= moved.due - three.stats().now <= 7_200_000
    assert_one_line_error(results["claim"], 1)  # reached the queue: no such group
    assert "group" in results["claim"].stderr
    for key in ("default", "wrong"):  # mismatch with the recorded count: one line, exit 1
        assert_one_line_error(results[key], 1)
        assert "created with partitions=3" in results[key].stderr
        assert "--partitions or STREAMDELAY_PARTITIONS" in results[key].stderr
    assert_one_line_error(results["zero"], 2)
    assert "partitions" in results["zero"].stderr

    env_stats = cli_many([["stats", name, "--json"]], url=redis_url,
                         STREAMDELAY_PARTITIONS="3")[0]
    assert env_stats.returncode == 0, env_stats.stderr
    assert json.loads(env_stats.stdout)["total"]["delayed"] == 3  # 3 enqueued, 1 cancelled, 1 new

    # A worker and a dispatcher given --partitions / STREAMDELAY_PARTITIONS serve every partition.
    soon = _ids_in_partition(2, 3, 3)[2]
    three.enqueue("cli.echo", {}, id=soon, delay=0.3)
    out = tmp_path / "handled.txt"
    app_env = {"CLI_APP_QUEUE": name, "CLI_APP_OUT": str(out)}
    worker = subprocess.Popen(
        command("worker", f"{APP}:worker", "--url", redis_url, "--partitions", "3",
                "--no-dispatch"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=cli_env(None, **app_env))
    dispatcher = subprocess.Popen(command("dispatch", name), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                  env=cli_env(redis_url, STREAMDELAY_PARTITIONS="3"))
    wrong = subprocess.Popen(command("worker", f"{APP}:worker", "--url", redis_url),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             env=cli_env(None, **app_env))
    try:
        assert wait_until(lambda: out.exists() and f"done {soon} 1" in out.read_text(),
                          timeout=30)
        for proc in (worker, dispatcher):
            proc.send_signal(signal.SIGTERM)
        logs = [proc.communicate(timeout=30)[1] for proc in (worker, dispatcher, wrong)]
    finally:
        for proc in (worker, dispatcher, wrong):
            if proc.poll() is None:
                proc.kill()
    assert worker.returncode == 0 and dispatcher.returncode == 0, logs
    assert "(3 partition(s))" in logs[0] and "queue " + name in logs[0]
    assert "(3 partition(s))" in logs[1] and "promoted 1 job(s)" in logs[1]
    assert wrong.returncode == 1 and "Traceback" not in logs[2]
    last = logs[2].strip().splitlines()[-1]
    assert re.match(r"streamdelay \w+: error: partitions:", last) and "--partitions" in last
    three.close()


def test_worker_and_dispatch_mask_passwords_while_redis_is_unreachable(tmp_path: Path) -> None:
    port = free_port()
    argv_url = f"redis://alice:argvSecret77@127.0.0.1:{port}/0"
    env_url = f"redis://bob:envSecret88@127.0.0.1:{port}/0"
    procs = [
        subprocess.Popen(command("worker", APP, "--url", argv_url), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT,
                         env=cli_env(None, CLI_APP_OUT=str(tmp_path / "out.txt"))),
        subprocess.Popen(command("dispatch", "q"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT, env=cli_env(env_url)),
    ]
    try:
        early = [read_until(proc.stderr, "retrying") for proc in procs]  # type: ignore[arg-type]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        logs = [first + proc.communicate(timeout=20)[1]
                for first, proc in zip(early, procs, strict=True)]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in procs] == [0, 0], logs
    for log, user in zip(logs, ("alice", "bob"), strict=True):
        assert "retrying" in log and f"{user}:***@127.0.0.1:{port}" in log, log
        assert "Secret" not in log and "Traceback" not in log, log


def _summary_figures(out: str) -> dict[str, float]:
    figures = {name: float(re.search(rf"^\s+{name}\s+(\d+)", out, re.M).group(1))  # type: ignore[union-attr]
               for name in ("handled", "retried", "dead")}
    late = re.search(r"p50 ([\d.]+) ms, p99 ([\d.]+) ms.*early: (\d+)", out)
    assert late, out
    figures.update(p50=float(late.group(1)), p99=float(late.group(2)), early=float(late.group(3)))
    return figures


def test_demo_runs_to_completion_on_a_reachable_redis(shared_redis: RedisServer) -> None:
    result = cli("demo", "--jobs", "40", "--max-delay", "2s", url=shared_redis.url, timeout=90)
    assert result.returncode == 0, (result.stdout, result.stderr)
    figures = _summary_figures(result.stdout)
    assert (figures["handled"], figures["retried"], figures["dead"], figures["early"]) == (
        41, 4, 1, 0)
    assert 0 <= figures["p50"] <= figures["p99"]
    assert "used as is" in result.stdout and "flaky-1: attempt 3 succeeds" in result.stdout
    name = re.search(r"queue\s+(demo-[0-9a-f]+)", result.stdout).group(1)  # type: ignore[union-attr]
    assert shared_redis.client().keys(f"sd:{{{name}#*") == []  # nothing left behind


def test_demo_starts_a_private_redis_when_none_answers() -> None:
    url = f"redis://:hunter2pw@127.0.0.1:{free_port()}/0"
    result = cli("demo", "--jobs", "20", "--max-delay", "1500ms", url=url, timeout=90)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert _summary_figures(result.stdout)["handled"] == 21
    assert "hunter2pw" not in result.stdout + result.stderr
    port = int(re.search(r"private redis-server on port (\d+)", result.stdout).group(1))  # type: ignore[union-attr]
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(2)
        sock.connect(("127.0.0.1", port))  # stopped at exit
