"""Workflows under the documented ACL line (docs/security.md): every command the workflow
scripts and plans send is in it (``ACL LOG`` stays empty), on three partitions so the outbox
and its forwarding run too."""

from __future__ import annotations

import asyncio

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.system.test_acl_tls import acl_server, documented_acl_line  # noqa: F401  (fixture)


def test_workflows_run_under_the_documented_acl(acl_server: RedisServer) -> None:  # noqa: F811
    admin = acl_server.client()
    admin.execute_command(*documented_acl_line("flow", "s3cret-pw"))
    admin.acl_log_reset()
    url = f"redis://sd-flow:s3cret-pw@127.0.0.1:{acl_server.port}/0"
    with sd.Queue("flow", url=url, partitions=3, retry_for=1.0, max_attempts=1) as queue:
        queue.enqueue("t", id="a")
        queue.enqueue("t", id="b", max_attempts=1)
        queue.enqueue("t", id="c", after=["a", "b"], on_parent_failure="run")
        queue.enqueue("t", id="d", after=["b"])
        queue.chain([sd.JobSpec("t", id=f"ch{i}") for i in range(4)])
        queue.batch([sd.JobSpec("t", id=f"m{i}") for i in range(6)], id="bt",
                    on_complete=sd.JobSpec("t"))
        queue.enqueue("t", id="gone", delay=300)
        queue.enqueue("t", id="e", after=["gone"])
        # a waiting child cancelled unlinks itself from its parents (here and, through the
        # outbox, in other partitions); an enqueue of an id that exists takes its links back
        # (docs/workflows.md#runs)
        queue.enqueue("t", id="far", delay=300)
        queue.enqueue("t", id="f1", after=["far", "gone"])
        assert queue.cancel("f1")
        assert not queue.enqueue("t", id="c", after=["b"]).created  # b: another partition
        assert queue.get("far").children is None  # type: ignore[union-attr]
        assert queue.cancel("far")  # (idle: no job left delayed)
        assert queue.get("c").parents == {"a": "pending", "b": "pending"}  # type: ignore[union-attr]
        assert queue.stats().topics["t"].waiting >= 4
        assert queue.cancel("gone")
        ran: list[str] = []
        worker = sd.Worker(queue, block=0.2)

        @worker.handler("t")
        def handle(job: sd.Job) -> None:
            ran.append(job.id)
            if job.id == "b" and ran.count("b") == 1:  # its replay succeeds
                raise RuntimeError("no")

        asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
        assert "c" in ran and "d" not in ran and "bt@2" in ran
        assert queue.batch_info("bt").state == "done"  # type: ignore[union-attr]
        assert {d.id for d in queue.dead_list()} == {"b", "d", "e"}
        # a replay re-checks the children's parents (the outbox asks another partition)
        assert queue.dead_replay("t") >= 2  # b, then d waits for it (e's parent was cancelled)
        again = sd.Worker(queue, block=0.2)
        again.handler("t")(handle)
        asyncio.run(asyncio.wait_for(again.serve(until_idle=True), 60))
        assert ran.count("b") == 2 and "d" in ran and "e" not in ran
    denied = [(e.get("reason"), e.get("object")) for e in admin.acl_log()]
    assert denied == [], f"the documented ACL is missing {denied}"
