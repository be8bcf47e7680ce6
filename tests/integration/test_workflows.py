"""Workflows (docs/workflows.md) on one partition: jobs that wait for parents, chains, batches
and their callbacks, against a real Redis server and a real Worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.system import test_docs_examples as docs_examples

pytestmark = pytest.mark.timeout(120)
example_env = docs_examples.example_env  # the fixture: a private redis-server for the examples
run_example = docs_examples.run_example


def run_worker(q: sd.Queue, handler: Callable[[sd.Job], Any], topic: str = "t") -> None:
    """Run a worker of ``topic`` until the queue is idle."""
    worker = sd.Worker(q, group="g", block=0.2)
    worker.handler(topic)(handler)
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))


def recorder(fail: frozenset[str] = frozenset()) -> tuple[list[str], Callable[[sd.Job], Any]]:
    ran: list[str] = []

    def handle(job: sd.Job) -> None:
        ran.append(job.id)
        if job.id in fail:
            raise RuntimeError("boom")
    return ran, handle


def test_a_child_waits_for_every_parent_then_runs(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="a")
        q.enqueue("t", id="b", delay=0.2)
        made = q.enqueue("t", id="c", after=["a", "b"])
        assert made.created and made.state == "waiting"
        info = q.get("c")
        assert info is not None and info.state == "waiting"
        assert info.parents == {"a": "pending", "b": "pending"} and info.children is None
        parent = q.get("b")
        assert parent is not None and parent.children == ["c"] and parent.parents is None
        assert q.stats().topics["t"].waiting == 1
        assert q.reschedule("c", delay=0) is False  # a waiting job has no due time yet
        ran, handle = recorder()
        run_worker(q, handle)
        assert sorted(ran[:2]) == ["a", "b"] and ran[2:] == ["c"]
        assert q.get("c") is None  # ran and acknowledged
        prefix = PartitionKeys(queue_name, 0).prefix
        assert q.client.exists(prefix + "deps:c", prefix + "children:a") == 0
        assert q.client.hget(prefix + "waiting", "t") in (b"0", None)


def test_a_failed_parent_dead_letters_its_child_or_runs_it(redis_url: str, queue_name: str
                                                           ) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="p")
        q.enqueue("t", id="dead-child", after=["p"])
        q.enqueue("t", id="grandchild", after=["dead-child"])
        q.enqueue("t", id="runs", after=["p"], on_parent_failure="run")
        ran, handle = recorder(frozenset({"p"}))
        run_worker(q, handle)
        assert ran == ["p", "runs"]
        dead = {d.id: d for d in q.dead_list("t")}
        assert dead["dead-child"].error == "parent failed: p"
        assert dead["grandchild"].error == "parent failed: dead-child"
        # a replay re-checks its parents: p is still dead, so it stays dead (nothing replayed;
        # tests/integration/test_workflows_replay.py has the rest)
        assert q.dead_replay("t", id="dead-child") == 0
        assert q.get("dead-child").state == "dead"  # type: ignore[union-attr]


def test_a_parent_that_ended_counts_by_its_outcome(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="ok")
        q.enqueue("t", id="bad")
        q.enqueue("t", id="first", after=["ok"])  # turns outcome keeping on
        run_worker(q, recorder(frozenset({"bad"}))[1])
        late = q.enqueue("t", id="late", after=["ok"])
        assert late.state == "delayed" and late.created
        doomed = q.enqueue("t", id="doomed", after=["ok", "bad"])
        assert doomed.state == "dead"
        assert q.enqueue("t", id="anyway", after=["bad"], on_parent_failure="run"
                         ).state == "delayed"


def test_cancelling_a_parent_ends_it_for_its_children(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="p", delay=60)
        q.enqueue("t", id="c", after=["p"])
        q.enqueue("t", id="r", after=["p"], on_parent_failure="run")
        assert q.cancel("p")
        assert q.get("c").state == "dead"  # type: ignore[union-attr]
        assert q.dead_list("t")[0].error == "parent failed: p (cancelled)"
        released = q.get("r")
        assert released is not None and released.state == "delayed"
        assert released.parents == {"p": "cancelled"}
        assert q.stats().topics["t"].waiting == 0
        assert q.cancel("r")


@pytest.mark.parametrize("after, field", [
    (["nobody"], "after"), (["self"], "after"), ("a", "after"), ([], "after"),
    (["bad id!"], "after"), ([f"p{i}" for i in range(1001)], "after"),
])
def test_bad_parents_are_refused_and_nothing_is_written(redis_url: str, queue_name: str,
                                                        after: Any, field: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.enqueue("t", id="a")
        with pytest.raises(sd.ValidationError) as caught:
            q.enqueue("t", id="self", after=after)
        assert caught.value.field == field
        assert q.get("self") is None
        with pytest.raises(sd.ValidationError) as policy:
            q.enqueue("t", id="self", after=["a"], on_parent_failure="maybe")
        assert policy.value.field == "on_parent_failure"


def test_a_chain_runs_in_order(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        made = q.chain([sd.JobSpec("t", id=f"s{i}") for i in range(5)])
        assert [m.state for m in made] == ["delayed"] + ["waiting"] * 4
        ran, handle = recorder()
        run_worker(q, handle)
        assert ran == [f"s{i}" for i in range(5)]


def test_a_batch_calls_back_exactly_once(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        info = q.batch([sd.JobSpec("t", id=f"m{i}") for i in range(5)], id="b1", close=False,
                       on_success=sd.JobSpec("done"), on_complete=sd.JobSpec("done"))
        assert (info.total, info.pending, info.state) == (5, 5, "open")
        more = q.batch([sd.JobSpec("t", id="m5"), sd.JobSpec("t", id="m0")], id="b1")
        assert (more.total, more.state) == (6, "running")
        with pytest.raises(sd.ValidationError) as closed:
            q.batch([sd.JobSpec("t", id="m9")], id="b1")
        assert closed.value.field == "id"
        _, handle = recorder()
        run_worker(q, handle)
        done, callbacks = recorder()
        run_worker(q, callbacks, "done")
        assert sorted(done) == ["b1@1", "b1@2"]
        final = q.batch_info("b1")
        assert final is not None and (final.succeeded, final.dead, final.state) == (6, 0, "done")
        assert q.batch_info("nope") is None


def test_a_batch_with_a_dead_member_only_completes(redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.batch([sd.JobSpec("t", id="ok"), sd.JobSpec("t", id="bad")], id="b2",
                on_success=sd.JobSpec("done"), on_complete=sd.JobSpec("done", {"x": 1}))
        run_worker(q, recorder(frozenset({"bad"}))[1])
        done, callbacks = recorder()
        run_worker(q, callbacks, "done")
        assert done == ["b2@2"]
        final = q.batch_info("b2")
        assert final is not None and (final.succeeded, final.dead, final.pending) == (1, 1, 0)
        empty = q.batch([], id="b3", on_complete=sd.JobSpec("done"))
        assert empty.state == "done" and q.get("b3@2") is not None


def test_the_workflows_example_runs(example_env: dict[str, str]) -> None:
    assert run_example("workflows.py", example_env).splitlines() == [
        "merge: waiting",
        "batch: 5 running",
        "merge after fetches: True",
        "chain: ['step-1', 'step-2', 'step-3']",
        "callbacks: ['pages@1', 'pages@2']",
        "batch: 5 0 0 done",
    ]


def test_the_async_faces_and_the_waiting_gauge(redis_url: str, queue_name: str) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from streamdelay.metrics.queue_exporter import QueueCollector

    async def produce() -> tuple[list[sd.EnqueueResult], sd.BatchInfo, sd.BatchInfo | None]:
        async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
            chained = await aq.chain([sd.JobSpec("t", id="x1", delay=60), sd.JobSpec("t")])
            await aq.enqueue("t", id="x2", after=["x1"])
            made = await aq.batch([sd.JobSpec("t", id="x3", delay=60)], id="ab",
                                  on_complete=sd.JobSpec("t"))
            return chained, made, await aq.batch_info("ab")

    chained, made, read = asyncio.run(produce())
    assert [c.state for c in chained] == ["delayed", "waiting"]
    assert made.state == "running" and read == made
    with sd.Queue(queue_name, url=redis_url) as q:
        registry = CollectorRegistry()
        registry.register(QueueCollector(q))
        text = generate_latest(registry).decode()
    assert f'streamdelay_queue_jobs{{queue="{queue_name}",state="waiting",topic="t"}} 2.0' in text


def test_other_callbacks_for_a_batch_are_refused_and_nothing_is_added(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url) as q:
        q.batch([sd.JobSpec("t", id="n1", delay=60)], id="b9", close=False,
                on_complete=sd.JobSpec("done"))
        with pytest.raises(sd.ValidationError) as other:
            q.batch([sd.JobSpec("t", id="n2")], id="b9", on_success=sd.JobSpec("done"))
        assert other.value.field == "on_success"
        assert q.get("n2") is None and q.batch_info("b9").total == 1  # type: ignore[union-attr]
        with pytest.raises(sd.ValidationError) as derived:
            q.batch([], id="b8", on_complete=sd.JobSpec("done", id="mine"))
        assert derived.value.field == "on_complete"
        again = q.batch([sd.JobSpec("t", id="n1", delay=60)], id="b9",
                        on_complete=sd.JobSpec("done"))  # the same call again: idempotent
        assert (again.total, again.state) == (1, "running")
