"""Every way a job ends dead outside a handler's failure ends it like failJob does
(docs/results.md#keeping-a-result, docs/workflows.md): its result is kept for its keep_result
and its waiters are woken, its workflow waiters are told (a child, a batch), and one 'dead' (or
'expired') event is written. The paths: a silent consumer's last attempt (requeueStuck), a
stream entry lost under releaseJobs / expireJobs, a child dead for a failed
parent (flow_dead), a topic key that holds no stream (promoteDue). And a dead child's kept
parents (``dd:<id>``) go when it leaves the dead letters other than by a replay."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys
from tests.integration.test_layout import call, promote, take
from tests.integration.test_pull import promote as promote_due
from tests.integration.test_workflows import recorder, run_worker

pytestmark = pytest.mark.timeout(120)


def waiter(q: sd.Queue, id: str, timeout: float = 10) -> tuple[threading.Thread, list[Any]]:
    """A thread blocked in ``q.result(id, timeout=...)``; its answer (or error) lands in the
    list."""
    out: list[Any] = []

    def wait() -> None:
        try:
            out.append(q.result(id, timeout=timeout))
        except sd.ResultTimeout as exc:
            out.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    return thread, out


def kinds(q: sd.Queue, id: str) -> list[str]:
    """The kinds of job ``id``'s events, oldest first."""
    return [e.kind for e in q.events(follow=False) if e.id == id]


def setup_layout_2(q: sd.Queue) -> PartitionKeys:
    """Partition 0 on layout 2 (a job in its stream keeps its body only there), group g on t."""
    q.enqueue("t", "setup", id="setup", delay=3600)
    assert q.migrate() == [1]
    keys = PartitionKeys(q.name, 0)
    call(q.client, "registerGroup", keys, ["g", "t"])
    return keys


def test_a_silent_consumers_last_attempt_ends_the_job_for_every_waiter(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=600, events=True) as q:
        keys = setup_layout_2(q)
        q.enqueue("t", {"n": 1}, id="stuck", max_attempts=1)
        q.enqueue("t", id="child", after=["stuck"], delay=3600)
        q.batch([sd.JobSpec("t", id="m", max_attempts=1)], id="b",
                on_complete=sd.JobSpec("t", {"cb": 1}))
        promote(q.client, keys, 2)
        assert sorted(take(q.client, keys)) == ["m", "stuck"]  # consumer c then goes silent
        thread, answer = waiter(q, "stuck")
        reply = call(q.client, "requeueStuck", keys, ["g", "t", "-", 100, 0, ""])
        assert sorted(reply[2]) == [b"m", b"stuck"]  # both dead: that was the last attempt
        thread.join()
        found = answer[0]
        assert isinstance(found, sd.JobResult) and found.state == "dead", found
        assert found.error is not None and found.error.startswith("ttr expired: consumer c")
        assert q.result("m").state == "dead"  # type: ignore[union-attr]
        assert kinds(q, "stuck").count("dead") == 1
        assert q.get("child").state == "dead"  # type: ignore[union-attr]
        info = q.batch_info("b")
        assert info is not None and (info.dead, info.pending, info.state) == (1, 0, "done")
        assert q.get("b@2") is not None  # on_complete written


def test_a_reservation_left_past_its_ttr_on_its_last_attempt_wakes_its_waiter(
        redis_url: str, queue_name: str) -> None:
    """The same end, reached by a live worker's reclaim loop (its requeueStuck calls)."""
    with sd.Queue(queue_name, url=redis_url, keep_result=600) as q:
        q.batch([sd.JobSpec("t", {"n": 1}, id="held", max_attempts=1, ttr=1)], id="b",
                on_complete=sd.JobSpec("cb", {"cb": 1}))
        promote_due(q)
        taken = q.reserve("t", group="g", consumer="silent")
        assert [r.id for r in taken] == ["held"]  # then never settled
        ran: list[str] = []
        worker = sd.Worker(q, group="g", block=0.1, reclaim_interval=0.2)
        worker.handler("t")(lambda job: ran.append(job.id))
        worker.handler("cb")(lambda job: ran.append(job.id))
        serving = threading.Thread(target=lambda: asyncio.run(worker.serve()))
        serving.start()
        try:
            found = q.result("held", timeout=30)
            assert found is not None and found.state == "dead", found
            assert found.error is not None and "silent" in found.error
            callback = q.result("b@2", timeout=30)  # the batch completed: on_complete ran
            assert callback is not None and callback.state == "succeeded", callback
            assert ran == ["b@2"]
        finally:
            worker.stop()
            serving.join()


def test_a_lost_entry_found_by_release_or_expiry_check_is_a_dead_end_with_its_event(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=600, events=True) as q:
        keys = setup_layout_2(q)
        for name in ("released", "checked"):
            q.enqueue("t", {"n": name}, id=name)
            q.enqueue("t", id=f"after-{name}", after=[name], delay=3600)
        promote(q.client, keys, 2)
        taken = take(q.client, keys)
        q.client.xtrim(keys.stream("t"), maxlen=0)  # an operator trims: the bodies are gone
        assert call(q.client, "releaseJobs", keys,
                    ["g", "t", "released", taken["released"][0]]) == 0
        assert call(q.client, "expireJobs", keys,
                    ["g", "t", "checked", taken["checked"][0]]) == [0]
        for name in ("released", "checked"):
            assert q.get(name).state == "dead", name  # type: ignore[union-attr]
            assert kinds(q, name).count("dead") == 1, (name, kinds(q, name))
            assert q.get(f"after-{name}").state == "dead", name  # type: ignore[union-attr]


def test_a_child_dead_for_its_failed_parent_has_a_dead_result(redis_url: str, queue_name: str
                                                              ) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=600, max_attempts=1) as q:
        q.enqueue("t", id="p")
        q.enqueue("t", id="c", after=["p"])
        q.enqueue("t", id="g", after=["c"])  # the cascade: c's death kills g in turn
        threads = [waiter(q, "c"), waiter(q, "g")]
        run_worker(q, recorder(frozenset({"p"}))[1])
        for (thread, answer), parent in zip(threads, ("p", "c"), strict=True):
            thread.join()
            found = answer[0]
            assert isinstance(found, sd.JobResult) and found.state == "dead", found
            assert found.error == f"parent failed: {parent}"
        # a child enqueued after its parent died is dead at once, with its result
        q.enqueue("t", id="late", after=["p"])
        late = q.result("late")
        assert late is not None and late.state == "dead" and late.error == "parent failed: p"


def test_a_job_whose_topic_key_holds_no_stream_is_a_dead_end_for_every_waiter(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, keep_result=600, events=True) as q:
        keys = PartitionKeys(queue_name, 0)
        q.enqueue("bad", {"n": 1}, id="j")
        q.enqueue("t", id="child", after=["j"], delay=3600)
        q.batch([sd.JobSpec("bad", id="m")], id="b", on_complete=sd.JobSpec("t", {"cb": 1}))
        q.client.set(keys.stream("bad"), "a foreign value")
        thread, answer = waiter(q, "j")
        dropped: list[Any] = []
        while len(dropped) < 2:
            dropped += call(q.client, "promoteDue", keys, [100])[3]
        thread.join()
        found = answer[0]
        assert isinstance(found, sd.JobResult) and found.state == "dead", found
        assert found.error is not None and "is not a stream" in found.error
        assert kinds(q, "j").count("dead") == 1
        assert q.get("child").state == "dead"  # type: ignore[union-attr]
        info = q.batch_info("b")
        assert info is not None and (info.dead, info.state) == (1, "done")
        assert q.get("b@2") is not None


@pytest.mark.parametrize("leave", ["reschedule", "purge", "cancel", "replace"])
def test_a_dead_child_that_leaves_the_dead_letters_forgets_its_parents(
        redis_url: str, queue_name: str, leave: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="p")
        q.enqueue("t", id="c", after=["p"])
        run_worker(q, recorder(frozenset({"p"}))[1])
        kept = PartitionKeys(queue_name, 0).prefix + "dd:c"
        assert q.client.exists(kept) == 1  # for a replay's re-check
        if leave == "reschedule":
            assert q.reschedule("c", delay=3600) is True
        elif leave == "purge":
            assert q.dead_purge("t", id="c") == 1
        elif leave == "cancel":
            assert q.cancel("c") is True
        else:  # a new job under the id: its parents go at its own end
            assert q.enqueue("t", id="c", delay=3600, replace=True).state == "delayed"
        assert q.client.exists(kept) == (leave == "replace")
        # the same id, enqueued again (or rescheduled), dead again by its own handler, is
        # replayed as a plain job: not held back by the parents of its earlier life
        if leave in ("purge", "cancel"):
            q.enqueue("t", id="c", delay=3600)
        assert q.reschedule("c", delay=0) is True
        ran, handle = recorder(frozenset({"c"}))
        run_worker(q, handle)
        assert ran == ["c"] and q.get("c").state == "dead"  # type: ignore[union-attr]
        assert q.client.exists(kept) == 0
        assert q.dead_replay("t", id="c") == 1
        assert q.get("c").state == "delayed"  # type: ignore[union-attr]


def test_a_child_dead_again_for_a_parent_keeps_only_the_parents_of_its_own_life(
        redis_url: str, queue_name: str) -> None:
    with sd.Queue(queue_name, url=redis_url, max_attempts=1) as q:
        q.enqueue("t", id="old")
        q.enqueue("t", id="c", after=["old"])
        run_worker(q, recorder(frozenset({"old"}))[1])
        q.enqueue("t", id="c", delay=3600, replace=True)  # a new life, another parent ...
        q.cancel("c")
        q.enqueue("t", id="new")
        q.enqueue("t", id="c", after=["new"])
        run_worker(q, recorder(frozenset({"new"}))[1])
        kept = PartitionKeys(queue_name, 0).prefix + "dd:c"
        assert set(q.client.hkeys(kept)) == {b"new", b"~", b"#"}  # "#": its link token
