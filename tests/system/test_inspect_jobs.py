"""Listing jobs page by page: ``Queue.jobs`` / ``AsyncQueue.jobs`` (both faces, via
``make_queue``) and ``streamdelay jobs``. Jobs are put in each state for real (see
test_queue_api.py's helpers); every listing is checked against what Redis holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.integration import test_queue_api
from tests.integration.test_queue_api import (  # the sync and async faces of every producer test
    Face,
    fail,
    promote,
    register_group,
    run_worker,
)

pytestmark = pytest.mark.timeout(90)
make_queue = test_queue_api.make_queue  # the sync and async faces fixture, shared


def all_pages(q: Face, state: str, limit: int, topic: str | None = None) -> list[sd.JobInfo]:
    """Every job of ``state``, following the cursors."""
    found: list[sd.JobInfo] = []
    cursor = None
    for _ in range(1000):
        page = q.jobs(state, topic=topic, limit=limit, cursor=cursor)
        assert len(page.jobs) <= limit
        found.extend(page.jobs)
        cursor = page.cursor
        if cursor is None:
            return found
    raise AssertionError("the cursors never ended")


def reserve_all(q: Face, topic: str, count: int, consumer: str = "c1") -> list[str]:
    """Read up to ``count`` ready entries of ``topic`` in each partition (plain XREADGROUP)."""
    taken: list[str] = []
    for p in range(q.config.partitions):
        stream = PartitionKeys(q.config.name, p).stream(topic)
        reply = q.client.xreadgroup("workers", consumer, {stream: ">"}, count=count)
        taken += [f[b"id"].decode() for _, entries in reply for _, f in entries]
    return taken


def snapshot(client: Any) -> dict[bytes, Any]:
    """Every key with its type and a dump of its value: what a read must leave unchanged."""
    return {key: client.dump(key) for key in client.keys("*")}


def test_delayed_pages_follow_due_time_then_id_across_partitions(make_queue: Any) -> None:
    q = make_queue(partitions=3)
    base = (q.client.time()[0] + 600) * 1000
    for i in range(41):  # ties: 4 due times only, so the id orders jobs of one due time
        q.enqueue("a" if i % 3 else "b", {"i": i}, at=(base + (i % 4) * 1000) / 1000,
                  id=f"job-{(i * 7) % 41:02d}")
    expected = sorted((base + (i % 4) * 1000, f"job-{(i * 7) % 41:02d}") for i in range(41))
    listed = all_pages(q, "delayed", limit=6)
    assert [(j.due, j.id) for j in listed] == expected
    assert {j.state for j in listed} == {"delayed"}
    only_b = all_pages(q, "delayed", limit=4, topic="b")
    assert [j.id for j in only_b] == [job for due, job in expected
                                     if q.get(job).topic == "b"]  # type: ignore[union-attr]
    assert only_b[0].body == {"i": int(only_b[0].id[4:]) * 6 % 41} and only_b[0].ttr_ms == 60_000


def test_ready_reserved_and_dead_pages_are_complete_and_in_stream_order(make_queue: Any) -> None:
    q = make_queue(partitions=2)
    ids = [f"r{i:02d}" for i in range(13)]
    for job in ids:
        q.enqueue("t", job, id=job)
    register_group(q, "t")
    assert promote(q) == 13
    taken = reserve_all(q, "t", 3)
    assert len(taken) == 6
    ready = all_pages(q, "ready", limit=2)
    assert sorted(j.id for j in ready) == sorted(set(ids) - set(taken))
    assert {j.state for j in ready} == {"ready"} and len(ready) == 7
    reserved = all_pages(q, "reserved", limit=4)
    assert sorted(j.id for j in reserved) == sorted(taken)
    assert {(j.state, j.consumer) for j in reserved} == {("reserved", "c1")}
    assert all(j.deliveries == 1 and j.idle_ms is not None for j in reserved)
    for job in ("d1", "d2", "d3"):
        q.enqueue("d", job, id=job, max_attempts=1)
    run_worker(q, "d", fail)
    dead = all_pages(q, "dead", limit=1)
    assert sorted(j.id for j in dead) == ["d1", "d2", "d3"]
    assert all(j.state == "dead" and "boom" in (j.error or "") for j in dead)
    assert all_pages(q, "dead", limit=5, topic="t") == []


def test_ready_jobs_of_one_partition_come_in_stream_order(make_queue: Any) -> None:
    q = make_queue()
    for i in range(9):  # due now, all at the same ms or not: promoted by (due, id)
        q.enqueue("t", i, id=f"s{i}", delay=0)
    promote(q)
    stream = PartitionKeys(q.config.name, 0).stream("t")
    order = [f[b"id"].decode() for _, f in q.client.xrange(stream)]
    assert [j.id for j in all_pages(q, "ready", limit=4)] == order


def test_a_topic_filter_over_a_large_backlog_stays_bounded_and_misses_nothing(
        make_queue: Any) -> None:
    q = make_queue()
    q.enqueue_many([sd.JobSpec("a", None, delay=600, id=f"a{i}") for i in range(2500)])
    q.enqueue("b", "late", delay=900, id="b-late")
    first = q.jobs("delayed", topic="b", limit=10)
    assert first.jobs == [] and first.cursor is not None  # 1000 members looked at, no b yet
    assert [j.id for j in all_pages(q, "delayed", limit=10, topic="b")] == ["b-late"]


def test_listing_writes_nothing_and_names_a_queue_that_does_not_exist(
        make_queue: Any, redis_url: str) -> None:
    q = make_queue()
    q.enqueue("t", 1, id="one", delay=60)
    before = snapshot(q.client)
    for state in ("delayed", "ready", "reserved", "dead"):
        q.jobs(state, topic="t")
        q.jobs(state)
    assert snapshot(q.client) == before
    ghost = sd.Queue(q.config.name + "-none", url=redis_url)
    with pytest.raises(sd.NoSuchQueue, match="no such queue"):
        ghost.jobs("delayed")
    assert snapshot(q.client) == before
    ghost.close()


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"state": "sleeping"}, "state"), ({"state": "ready", "limit": 0}, "limit"),
    ({"state": "ready", "limit": 1001}, "limit"), ({"state": "ready", "topic": "a|b"}, "topic"),
    ({"state": "ready", "cursor": "d:1:x"}, "cursor"),
    ({"state": "delayed", "cursor": "garbage"}, "cursor"),
])
def test_bad_arguments_are_refused_naming_the_field(make_queue: Any, kwargs: dict[str, Any],
                                                    field: str) -> None:
    q = make_queue()
    q.enqueue("t", 1)
    with pytest.raises(sd.ValidationError) as caught:
        q.jobs(**kwargs)
    assert caught.value.field == field and str(caught.value).startswith(f"{field}:")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real ``streamdelay`` command."""
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], capture_output=True,
                          text=True, timeout=60)


def test_the_jobs_command_pages_with_cursors_in_text_and_json(queue: sd.Queue,
                                                              redis_url: str) -> None:
    for i in range(5):
        queue.enqueue("t", {"n": i}, id=f"c{i}", delay=100 + i)
    out = cli("jobs", queue.name, "--state", "delayed", "--limit", "3", "--json",
              "--url", redis_url)
    assert out.returncode == 0, out.stderr
    page = json.loads(out.stdout)
    assert [j["id"] for j in page["jobs"]] == ["c0", "c1", "c2"] and page["cursor"]
    rest = cli("jobs", queue.name, "--state", "delayed", "--cursor", page["cursor"], "--json",
               "--url", redis_url)
    assert [j["id"] for j in json.loads(rest.stdout)["jobs"]] == ["c3", "c4"]
    assert json.loads(rest.stdout)["cursor"] is None
    text = cli("jobs", queue.name, "--state", "delayed", "--limit", "2", "--url", redis_url)
    assert text.returncode == 0 and text.stdout.splitlines()[0].split()[:3] == [
        "ID", "TOPIC", "DUE"]
    assert "c1" in text.stdout and "c2" not in text.stdout and "--cursor d:" in text.stdout
    none = cli("jobs", queue.name + "-none", "--state", "ready", "--url", redis_url)
    assert none.returncode == 1 and "no such queue" in none.stderr
    bad = cli("jobs", queue.name, "--state", "sleeping", "--url", redis_url)
    assert bad.returncode == 2 and "--state" in bad.stderr and "see" in bad.stderr
