"""Record layout 2 (docs/keys.md#layouts): a job in its topic stream keeps its body once, in the
stream entry; the jobs hash holds its header only. Every script that takes a job out of its
stream or shows it gets the body back from the entry; a queue of layout 1 keeps full records
(what an older process reads) until ``migrate``; a job whose entry was trimmed away goes dead
with a reason instead of vanishing."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import script
from tests.support.apps.reliability_app import ROOT
from tests.support.web_server import WebServer
from tests.system.test_web_consumers import _call

pytestmark = pytest.mark.timeout(120)


def call(client: redis.Redis, name: str, keys: PartitionKeys, args: list[Any]) -> Any:
    """Run one protocol script directly."""
    return run_step_sync(client, script(name).call(keys.script_keys(), args))


def promote(client: redis.Redis, keys: PartitionKeys, expected: int) -> None:
    """Run ``promoteDue`` until ``expected`` jobs moved (a job is due at the next server ms)."""
    moved, deadline = 0, time.monotonic() + 5
    while moved < expected:
        moved += call(client, "promoteDue", keys, [100])[0]
        assert time.monotonic() < deadline, moved
        time.sleep(0.002)


def header_only(raw: bytes | None) -> bool:
    """A record that ends with its 8th ``|`` (no blob)."""
    assert raw is not None
    return raw.split(b"|", 8)[8] == b""


def take(client: redis.Redis, keys: PartitionKeys, topic: str = "t"
         ) -> dict[str, tuple[str, bytes]]:
    """Read every new entry of ``topic`` for consumer c of group g: job id -> (entry, rec)."""
    read = client.xreadgroup("g", "c", {keys.stream(topic): ">"}, count=100)
    return {f[b"id"].decode(): (eid.decode(), f[b"rec"]) for eid, f in read[0][1]} if read else {}


@pytest.fixture
def keys(queue: sd.Queue) -> PartitionKeys:
    """Partition 0 of a queue created by this release, with group g on topic t."""
    queue.enqueue("t", "setup", id="setup", delay=3600)  # creates the queue (meta), layout 1
    assert queue.migrate() == [1]  # no live process reads less: layout 2
    k = PartitionKeys(queue.name, 0)
    call(queue.client, "registerGroup", k, ["g", "t"])
    return k


def test_a_new_queue_starts_on_layout_1_and_migrate_is_the_step_to_2(redis_url: str,
                                                                     queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3) as q:
        q.enqueue("t", 1, delay=60)  # every release reads layout 1 (docs/keys.md#layouts)
        metas = [q.client.hgetall(PartitionKeys(queue_name, p).meta) for p in range(3)]
        assert [m.get(b"layout") for m in metas] == [b"1"] * 3
        assert q.migrate() == [1, 1, 1]
        metas = [q.client.hgetall(PartitionKeys(queue_name, p).meta) for p in range(3)]
        assert [m.get(b"layout") for m in metas] == [b"2"] * 3
        assert q.migrate() == [2, 2, 2]  # nothing to do: idempotent


def test_promote_writes_the_header_only_and_every_reader_shows_the_body(
        queue: sd.Queue, keys: PartitionKeys) -> None:
    c = queue.client
    for i in range(3):
        queue.enqueue("t", {"n": i, "pad": "x" * 100}, id=f"j{i}", headers={"h": str(i)})
    before = {f"j{i}": c.hget(keys.jobs, f"j{i}") for i in range(3)}
    promote(c, keys, 3)
    entries = {e[1][b"id"].decode(): e for e in c.xrange(keys.stream("t"))}
    for i in range(3):
        raw = c.hget(keys.jobs, f"j{i}")
        assert header_only(raw) and raw.startswith(b"s|0|")  # type: ignore[union-attr]
        eid, fields = entries[f"j{i}"]
        assert raw.split(b"|")[6] == eid  # type: ignore[union-attr]
        assert fields[b"rec"] == before[f"j{i}"]  # the stream keeps the record as it was
        assert len(raw) < len(before[f"j{i}"]) - 100  # type: ignore[arg-type]
    take(c, keys)  # j0..j2 reserved by c
    got = queue.get("j1")
    assert got is not None and got.state == "reserved" and got.body == {"n": 1, "pad": "x" * 100}
    assert got.headers == {"h": "1"}
    page = queue.jobs("reserved", "t")
    assert sorted((j.id, j.body["n"]) for j in page.jobs) == [("j0", 0), ("j1", 1), ("j2", 2)]
    queue.enqueue("t", {"n": 9}, id="j9")
    promote(c, keys, 1)
    ready = queue.get("j9")
    assert ready is not None and ready.state == "ready" and ready.body == {"n": 9}
    assert [j.body for j in queue.jobs("ready", "t").jobs] == [{"n": 9}]


def test_retry_release_reclaim_and_reschedule_carry_the_body(
        queue: sd.Queue, keys: PartitionKeys) -> None:
    c = queue.client
    for name in ("retry", "dead", "release", "later", "stuck", "moved"):
        queue.enqueue("t", {"job": name}, id=name, max_attempts=1 if name == "dead" else 5)
    full = {name: c.hget(keys.jobs, name) for name in
            ("retry", "dead", "release", "later", "stuck", "moved")}
    promote(c, keys, 6)
    taken = take(c, keys)
    assert all(header_only(c.hget(keys.jobs, n)) for n in full)
    # a retry goes back to the delayed set with its whole record
    retry = ["g", "t", "retry", taken["retry"][0], 0, "0", "boom", 0]
    assert call(c, "failJob", keys, retry)[0] == 1
    retried = c.hget(keys.jobs, "retry")
    assert retried is not None and retried.startswith(b"d|1|")
    assert retried.split(b"|", 8)[8] == full["retry"].split(b"|", 8)[8]  # type: ignore[union-attr]
    # dead: the dead record is whole; get shows the body; replay brings it back whole
    assert call(c, "failJob", keys, ["g", "t", "dead", taken["dead"][0], 0, "0", "boom", 0])[0] == 2
    dead = queue.get("dead")
    assert dead is not None and dead.state == "dead" and dead.body == {"job": "dead"}
    assert not header_only(c.hget(keys.jobs, "dead"))
    # graceful shutdown: a new entry with the whole record, the hash stays header-only
    assert call(c, "releaseJobs", keys, ["g", "t", "release", taken["release"][0]]) == 1
    # a def handler outliving its process: back to the delayed set, whole
    assert call(c, "releaseJobsLater", keys, ["g", 0, "t", "later", taken["later"][0]]) == 1
    assert c.hget(keys.jobs, "later").split(b"|", 8)[8] == full["later"].split(b"|", 8)[8]  # type: ignore[union-attr]
    # a silent consumer's job: re-queued as a new attempt with its body
    reply = call(c, "requeueStuck", keys, ["g", "t", "-", 100, 0, ""])
    assert b"stuck" in reply[1] and b"moved" in reply[1]
    # an operator's reschedule of a job in its stream: delayed, whole
    assert call(c, "rescheduleJob", keys, ["moved", "r", 0, 0])[0] == 1
    assert c.hget(keys.jobs, "moved").split(b"|", 8)[8] == full["moved"].split(b"|", 8)[8]  # type: ignore[union-attr]
    assert header_only(c.hget(keys.jobs, "release")) and header_only(c.hget(keys.jobs, "stuck"))
    promote(c, keys, 3)  # retry, later, moved
    again = take(c, keys)
    assert sorted(again) == ["later", "moved", "release", "retry", "stuck"]
    for name, (_, rec) in again.items():  # every new entry carries the body
        assert rec.split(b"|", 8)[8] == full[name].split(b"|", 8)[8]  # type: ignore[union-attr]
    assert call(c, "replayDead", keys, ["t", 10, 0, ""]) == [b"dead"]
    assert c.hget(keys.jobs, "dead").split(b"|", 8)[8] == full["dead"].split(b"|", 8)[8]  # type: ignore[union-attr]


def test_a_job_whose_stream_entry_was_trimmed_goes_dead_with_the_reason(
        queue: sd.Queue, keys: PartitionKeys) -> None:
    c = queue.client
    for name in ("failed", "released", "later", "rescheduled"):
        queue.enqueue("t", {"job": name}, id=name)
    promote(c, keys, 4)
    taken = take(c, keys)
    c.xtrim(keys.stream("t"), maxlen=0)  # an operator trims the stream: the bodies are gone
    assert call(c, "failJob", keys, ["g", "t", "failed", taken["failed"][0], 0, "0", "boom", 0]) \
        [0] == 2
    assert call(c, "releaseJobs", keys, ["g", "t", "released", taken["released"][0]]) == 0
    assert call(c, "releaseJobsLater", keys, ["g", 0, "t", "later", taken["later"][0]]) == 0
    lost = queue.get("rescheduled")  # still in its stream by its record: shown without a body
    assert lost is not None and lost.state == "reserved" and lost.body is None
    assert call(c, "rescheduleJob", keys, ["rescheduled", "r", 0, 0]) == [0]
    for name in ("failed", "released", "later", "rescheduled"):
        job = queue.get(name)
        assert job is not None and job.state == "dead" and job.body is None, name
        assert job.error is not None and job.error.startswith("stream entry lost"), job.error
    assert "last error: boom" in queue.get("failed").error  # type: ignore[union-attr,operator]
    assert c.zcard(keys.delayed) == 1 and c.xlen(keys.dead("t")) == 4  # only "setup" delayed


def test_a_queue_of_layout_1_keeps_whole_records_until_migrate(
        queue: sd.Queue, keys: PartitionKeys) -> None:
    c = queue.client
    c.hdel(keys.meta, "layout")  # as an older release created it
    queue.enqueue("t", {"n": 1}, id="old")
    promote(c, keys, 1)
    raw = c.hget(keys.jobs, "old")
    assert raw is not None and raw.startswith(b"s|") and not header_only(raw)
    assert queue.migrate() == [1]
    assert c.hget(keys.meta, "layout") == b"2" and queue.migrate() == [2]
    queue.enqueue("t", {"n": 2}, id="new")
    promote(c, keys, 1)
    assert header_only(c.hget(keys.jobs, "new")) and not header_only(c.hget(keys.jobs, "old"))
    taken = take(c, keys)  # both layouts side by side are settled alike
    for name in ("old", "new"):
        assert call(c, "failJob", keys, ["g", "t", name, taken[name][0], 0, "0", "x", 0])[0] == 1
        assert not header_only(c.hget(keys.jobs, name))


def test_migrate_command(redis_url: str, queue: sd.Queue, keys: PartitionKeys) -> None:
    env = {**os.environ, "STREAMDELAY_URL": redis_url}
    queue.client.hdel(keys.meta, "layout")
    run = [sys.executable, "-m", "streamdelay", "migrate"]
    first = subprocess.run([*run, queue.name], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
    assert first.returncode == 0, first.stderr
    moved = f"{queue.name}: layout 2 on 1 partition(s), 1 moved from layout 1"
    assert first.stdout.strip() == moved
    assert queue.client.hget(keys.meta, "layout") == b"2"
    again = subprocess.run([*run, queue.name], capture_output=True, text=True, env=env, cwd=ROOT,
                           timeout=60)
    assert again.stdout.strip() == f"{queue.name}: layout 2 on 1 partition(s), already so"
    missing = subprocess.run([*run, "nobody-used-this"], capture_output=True, text=True, env=env,
                             cwd=ROOT, timeout=60)
    assert missing.returncode == 1 and "no such queue" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert not queue.client.exists(PartitionKeys("nobody-used-this", 0).meta)


def test_a_layout_this_release_does_not_know_is_refused_everywhere(
        redis_url: str, queue_name: str) -> None:
    meta = PartitionKeys(queue_name, 0).meta
    with sd.Queue(queue_name, url=redis_url) as queue:
        queue.client.hset(meta, mapping={"partitions": 1, "layout": 3})  # a later release's
        with pytest.raises(sd.LayoutError, match="layout '3'") as refused:
            queue.enqueue("t", 1)
        assert refused.value.field == "layout" and meta in str(refused.value)
        worker = sd.Worker(queue)
        worker.handler("t")(lambda job: None)
        with pytest.raises(sd.LayoutError, match="cannot read"):
            worker.run(until_idle=True)
        # the dispatcher's script writes nothing on it either
        keys = PartitionKeys(queue_name, 0)
        queue.client.hset(meta, "layout", 1)
        queue.enqueue("t", {"n": 1}, id="j")
        queue.client.hset(meta, "layout", 3)
        with pytest.raises(sd.LayoutError, match="cannot write"):
            call(queue.client, "promoteDue", keys, [100])
        assert queue.client.zscore(keys.delayed, "j") is not None
        assert queue.get("j").state == "delayed"  # type: ignore[union-attr]


def test_a_running_worker_stops_when_the_queue_moves_to_a_layout_it_does_not_know(
        queue: sd.Queue) -> None:
    queue.enqueue("t", 1, delay=3600)  # keeps the worker from going idle
    worker = sd.Worker(queue, consumer="w-layout")
    worker.fleet_every = 0.1
    worker.handler("t")(lambda job: None)
    fleet = PartitionKeys(queue.name, 0).fleet
    running = threading.Thread(target=lambda: asyncio.run(worker.serve()))
    running.start()
    deadline = time.monotonic() + 10
    while queue.client.hget(fleet, "w-layout") is None:  # started: it said it reads up to 2
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert queue.client.hget(fleet, "w-layout").startswith(b"2|")  # type: ignore[union-attr]
    queue.client.hset(PartitionKeys(queue.name, 0).meta, "layout", 3)  # a later release's
    running.join(10)  # its fleet renewal sees layout 3, logs it and stops gracefully
    assert not running.is_alive()


def test_workers_and_pull_consumers_join_the_fleet_and_migrate_names_a_stranger(
        queue: sd.Queue, keys: PartitionKeys) -> None:
    c = queue.client
    c.hdel(keys.meta, "layout")  # back to layout 1, as an older release created it
    fleet = PartitionKeys(queue.name, 0).fleet
    worker = sd.Worker(queue, consumer="w-1", group="g")
    worker.handler("u")(lambda job: None)
    queue.enqueue("u", 1, id="run-now")
    worker.run(until_idle=True)
    assert queue.reserve("u", group="g", consumer="pull-1") == []
    now_ms = int(c.time()[0]) * 1000
    for member in (b"w-1", b"pull-1"):
        layout, _, until = c.hget(fleet, member).partition(b"|")  # type: ignore[union-attr]
        assert layout == b"2" and now_ms + 80_000 < int(until) <= now_ms + 91_000
    assert 0 < c.pttl(fleet) <= 180_000
    queue.enqueue("t", 2, id="taken")
    promote(c, keys, 1)
    assert list(take(c, keys)) == ["taken"]  # consumer c of group g: no fleet entry
    with pytest.raises(sd.LayoutError, match="'c'") as refused:
        queue.migrate()
    assert "w-1" not in str(refused.value) and "pull-1" not in str(refused.value)
    assert c.hget(keys.meta, "layout") is None  # nothing written
    assert queue.migrate(seen_within=0) == [1]  # the window: c took its job longer ago
    assert c.hget(keys.meta, "layout") == b"2"


def test_http_consumers_join_the_fleet_and_a_queue_on_an_unknown_layout_is_refused(
        redis_url: str, queue_name: str) -> None:
    later = f"{queue_name}-l3"
    with sd.Queue(queue_name, url=redis_url) as queue:
        queue.enqueue("t", {"n": 1}, id="h")
        queue.client.hset(PartitionKeys(later, 0).meta, mapping={"partitions": 1, "layout": 3})
        with WebServer(redis_url, [queue_name, later]) as server:
            path = "/v1/queues/{}/topics/t:reserve"
            status, _ = _call(server, "POST", path.format(queue_name),
                              {"group": "g", "consumer": "h-1", "wait_ms": 0, "count": 1})
            assert status == 200
            entry = queue.client.hget(PartitionKeys(queue_name, 0).fleet, "h-1")
            assert entry is not None and entry.startswith(b"2|")
            status, body = _call(server, "POST", path.format(later),
                                 {"group": "g", "consumer": "h-1", "wait_ms": 0, "count": 1})
            assert status == 503 and "layout '3'" in body["error"]["message"], body
