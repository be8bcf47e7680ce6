"""``POST /v1/queues/{queue}/workers/{name}:quiet`` and ``:stop`` of a live ``streamdelay
serve`` with a real worker process: the admin scope, 404 naming ``name`` for no live worker,
the worker quieted (state ``quiet``) then stopped (exit 0) (docs/http.md#workers,
docs/operations.md#quiet-and-stop)."""

from __future__ import annotations

import streamdelay as sd
from tests.support.web_server import WebServer
from tests.system.test_fleet_workers import fleet_worker, listed
from tests.system.test_metrics_prometheus import running, wait_for
from tests.system.test_web_workers import call


def test_quiet_and_stop_routes(redis_url: str, queue_name: str) -> None:
    worker = fleet_worker(redis_url, queue_name)
    with running(worker), WebServer(redis_url, [queue_name]) as server, \
            sd.Queue(queue_name, url=redis_url) as q:
        wait_for("the worker listed", lambda: [w.pid for w in listed(q)] == [worker.pid])
        name = q.workers()[0].name
        base = f"/v1/queues/{queue_name}/workers"
        for token in ("reader", "writer", "consumer"):  # admin only
            assert call(server, "POST", f"{base}/{name}:quiet", token=token)[0] == 403
            assert call(server, "POST", f"{base}/{name}:stop", token=token)[0] == 403
        assert [w.state for w in q.workers()] == ["running"]
        for verb in ("quiet", "stop"):
            status, missing = call(server, "POST", f"{base}/no-such-worker:{verb}",
                                   token="admin")
            assert status == 404 and missing["error"]["field"] == "name", missing
            assert "no-such-worker" in missing["error"]["message"]
        assert call(server, "POST", f"/v1/queues/not-served/workers/{name}:quiet",
                    token="admin")[0] == 404

        status, reply = call(server, "POST", f"{base}/{name}:quiet", token="admin")
        assert status == 200 and reply == {"name": name, "command": "quiet", "changed": True}
        wait_for("state quiet", lambda: [w.state for w in q.workers()] == ["quiet"])
        status, reply = call(server, "POST", f"{base}/{name}:quiet", token="admin")
        assert status == 200 and reply["changed"] is False
        status, reply = call(server, "POST", f"{base}/{name}:stop", token="admin")
        assert status == 200 and reply == {"name": name, "command": "stop", "changed": True}
        assert worker.wait(30) == 0
