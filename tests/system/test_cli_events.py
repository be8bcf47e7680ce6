"""``streamdelay events QUEUE`` (docs/cli.md#events): prints the kept events, filters by topic
and time, resumes after a cursor and follows new events across partitions."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import streamdelay as sd
from tests.system.test_cli import ROOT, cli, cli_env, command


def test_events_print_filter_and_resume(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True, partitions=2) as q:
        for i in range(3):
            q.enqueue("a", i, id=f"a{i}", delay=3600)
        q.enqueue("b", 0, id="b0", delay=3600)
        assert q.cancel("a0")
    plain = cli("events", queue_name, "--partitions", "2", url=redis_url)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert len(lines) == 5 and "cancelled" in lines[-1] and "a0" in lines[-1]
    assert "enqueued" in lines[0] and "Z  " in lines[0]
    got = cli("events", queue_name, "--partitions", "2", "--topic", "a", "--json", url=redis_url)
    events = [json.loads(line) for line in got.stdout.splitlines()]
    assert [e["topic"] for e in events] == ["a"] * 4
    rest = cli("events", queue_name, "--partitions", "2", "--topic", "a", "--json",
               "--since", events[1]["cursor"], url=redis_url)
    assert [json.loads(line)["cursor"] for line in rest.stdout.splitlines()] == [
        e["cursor"] for e in events[2:]]
    recent = cli("events", queue_name, "--partitions", "2", "--since", "10m", url=redis_url)
    assert recent.stdout == plain.stdout
    bad = cli("events", queue_name, "--partitions", "2", "--since", "1-0", url=redis_url)
    assert bad.returncode == 2 and "since" in bad.stderr


def test_since_a_cursor_inside_an_entry(redis_url: str, queue_name: str) -> None:
    """An enqueue_many writes one entry of several events (docs/events.md#entries): the cursor
    of an event inside it (``<entry id>.<n>``) resumes after that event."""
    with sd.Queue(queue_name, url=redis_url, events=True) as q:
        q.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=3600) for i in range(4)])
    got = cli("events", queue_name, "--json", url=redis_url)
    events = [json.loads(line) for line in got.stdout.splitlines()]
    assert "." in events[1]["cursor"]
    rest = cli("events", queue_name, "--json", "--since", events[1]["cursor"], url=redis_url)
    assert rest.returncode == 0, rest.stderr
    assert [json.loads(line)["id"] for line in rest.stdout.splitlines()] == ["m2", "m3"]


def test_events_follow(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, events=True, partitions=3) as q:
        q.enqueue("t", 0, id="first", delay=3600)
        follower = subprocess.Popen(
            command("events", queue_name, "--partitions", "3", "--follow", "--json"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=cli_env(redis_url), cwd=ROOT)
        try:
            assert follower.stdout is not None
            seen: list[str] = []
            done = threading.Event()

            def read() -> None:
                assert follower.stdout is not None
                for line in follower.stdout:
                    seen.append(json.loads(line)["id"])
                    if len(seen) == 7:
                        done.set()
                        return

            threading.Thread(target=read, daemon=True).start()
            time.sleep(1.5)  # the interpreter starts and reads what is kept
            for i in range(6):
                q.enqueue("t", i, id=f"live{i}", delay=3600)
            assert done.wait(15), (seen, follower.poll())
            assert sorted(seen) == sorted(["first", *(f"live{i}" for i in range(6))])
            assert follower.poll() is None  # still following
        finally:
            follower.terminate()
            follower.wait(10)
