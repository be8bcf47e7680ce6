"""Listing the jobs that wait for their parents (docs/workflows.md#listing-waiting-jobs):
``q.jobs("waiting")`` pages through them on every partition, by enqueue time; a job leaves the
list when it is released, dead-lettered for a failed parent, cancelled or replaced."""

from __future__ import annotations

import streamdelay as sd
from streamdelay.dispatch.outbox import forward_plan, read_outbox_command
from streamdelay.io.runner import drive_sync, run_step_sync
from streamdelay.protocol.keys import PartitionKeys


def _forward(q: sd.Queue) -> None:
    """What the dispatchers do: apply every partition's outbox on the waiters' partitions."""
    for p in range(3):
        keys = PartitionKeys(q.name, p)
        reply = run_step_sync(q.client, read_outbox_command(keys, None))
        drive_sync(q.client, forward_plan(keys, 3, reply), None)


def _all(q: sd.Queue, topic: str | None = None, limit: int = 2) -> list[str]:
    found: list[str] = []
    cursor: str | None = None
    while True:
        page = q.jobs("waiting", topic=topic, limit=limit, cursor=cursor)
        assert all(j.state == "waiting" for j in page.jobs)
        found.extend(j.id for j in page.jobs)
        cursor = page.cursor
        if cursor is None:
            return found


def test_waiting_jobs_are_listed_until_they_leave_that_state(redis_url: str, queue_name: str
                                                             ) -> None:
    with sd.Queue(queue_name, url=redis_url, partitions=3, max_attempts=1) as q:
        q.enqueue("t", id="parent", delay=3600)
        kids = [f"kid{i}" for i in range(7)]
        for kid in kids:
            q.enqueue("t" if kid != "kid6" else "u", id=kid, after=["parent"],
                      on_parent_failure="run" if kid == "kid5" else "dead")
        q.chain([sd.JobSpec("t", id="c0", delay=3600), sd.JobSpec("t", id="c1")])
        assert sorted(_all(q)) == sorted([*kids, "c1"])
        assert _all(q, topic="u") == ["kid6"]
        assert q.jobs("delayed").jobs[0].id in ("parent", "c0")  # unchanged
        assert q.cancel("kid0")  # cancelled while waiting
        q.enqueue("t", id="kid1", replace=True)  # replaced by an ordinary job
        assert "kid0" not in _all(q) and "kid1" not in _all(q)
        assert q.cancel("parent")  # dead letters kid2..4 and kid6, releases kid5
        _forward(q)
        assert _all(q) == ["c1"]
        assert q.get("kid5").state == "delayed"  # type: ignore[union-attr]
        assert q.cancel("c0")  # and c1 goes dead: nothing waits
        _forward(q)
        assert _all(q) == []
        assert q.stats().topics["t"].waiting == 0
