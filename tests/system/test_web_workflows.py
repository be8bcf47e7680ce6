"""The workflow routes of the JSON API against a live ``streamdelay serve`` (docs/workflows.md,
docs/http.md): ``after`` on enqueue, ``jobs:chain``, ``jobs:batch`` with callbacks,
``GET .../batches/{id}``; bad input is a 4xx naming the field."""

from __future__ import annotations

from tests.support.web_server import WebServer


def _q(server: WebServer) -> str:
    return f"/v1/queues/{server.queues[0]}"


def test_after_chain_batch_and_batch_info(web_server: WebServer) -> None:
    base = _q(web_server)
    status, _ = web_server.request("POST", f"{base}/jobs", {"topic": "t", "id": "wp1",
                                                            "delay": 60})
    assert status == 201
    status, child = web_server.request("POST", f"{base}/jobs", {
        "topic": "t", "id": "wk1", "after": ["wp1"], "on_parent_failure": "run"})
    assert status == 201 and child["state"] == "waiting"
    status, job = web_server.request("GET", f"{base}/jobs/wk1", token="reader")
    assert status == 200 and job["state"] == "waiting" and job["parents"] == {"wp1": "pending"}
    status, chain = web_server.request("POST", f"{base}/jobs:chain", {
        "jobs": [{"topic": "t", "id": "wc1", "delay": 60}, {"topic": "t", "id": "wc2"}]})
    assert status == 200
    assert [r["state"] for r in chain["results"]] == ["delayed", "waiting"]
    status, batch = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [{"topic": "t", "id": "wm1", "delay": 60}], "batch": "wb1",
        "on_complete": {"topic": "t", "body": {"done": True}}})
    assert status == 200 and batch["results"] == []
    assert batch["batch"]["total"] == 1 and batch["batch"]["state"] == "running"
    assert batch["batch"]["on_complete"] == "wb1@2"
    status, info = web_server.request("GET", f"{base}/batches/wb1", token="reader")
    assert status == 200 and info["pending"] == 1
    status, missing = web_server.request("GET", f"{base}/batches/nope", token="reader")
    assert status == 404 and missing["error"]["field"] == "id"
    status, stats = web_server.request("GET", f"{base}/stats", token="reader")
    assert status == 200 and stats["topics"]["t"]["waiting"] == 2


def test_bad_workflow_input_names_the_field(web_server: WebServer) -> None:
    base = _q(web_server)
    status, error = web_server.request("POST", f"{base}/jobs", {"topic": "t",
                                                                "after": ["ghost-parent"]})
    assert status == 422 and error["error"]["field"] == "after"
    status, error = web_server.request("POST", f"{base}/jobs", {"topic": "t", "id": "me",
                                                                "after": ["me"]})
    assert status == 422 and error["error"]["field"] == "after"
    status, error = web_server.request("POST", f"{base}/jobs", {
        "topic": "t", "after": [f"p{i}" for i in range(1001)]})
    assert status == 400 and "after" in error["error"]["message"]
    status, error = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [{"topic": "t", "after": ["x"]}]})
    assert status == 422 and error["error"]["field"] == "jobs[0].after"
    status, _ = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [], "batch": "closed-b"})
    assert status == 200
    status, error = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [{"topic": "t"}], "batch": "closed-b"})
    assert status == 422 and error["error"]["field"] == "id"


def test_after_with_job_options_and_a_callback_with_options(web_server: WebServer) -> None:
    """``after`` with ``priority``, ``key`` and ``expires`` waits with its options; a batch
    callback takes them too (a key keys the batch id), an id of its own is a 422 naming it
    (docs/workflows.md#callback-options)."""
    base = _q(web_server)
    status, _ = web_server.request("POST", f"{base}/jobs", {"topic": "t", "id": "op1",
                                                            "delay": 60})
    assert status == 201
    status, child = web_server.request("POST", f"{base}/jobs", {
        "topic": "t", "id": "ok1", "after": ["op1"], "priority": 9, "key": "tenant-1",
        "expires": "10m"})
    assert status == 201 and child["state"] == "waiting" and child["id"] == "{tenant-1}ok1"
    status, job = web_server.request("GET", f"{base}/jobs/%7Btenant-1%7Dok1", token="reader")
    assert status == 200 and (job["priority"], job["key"], job["expires_at"]) == (
        9, "tenant-1", None)
    status, made = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [], "batch": "ob1", "on_success": {"topic": "t", "priority": 9,
                                                   "expires": "10m", "max_attempts": 3}})
    assert status == 200 and made["batch"]["state"] == "done", made
    status, callback = web_server.request("GET", f"{base}/jobs/ob1@1", token="reader")
    assert status == 200 and (callback["priority"], callback["max_attempts"]) == (9, 3)
    assert callback["expires_at"] is not None
    status, keyed = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [], "batch": "ob2", "on_complete": {"topic": "t", "key": "tenant-2"}})
    assert status == 200 and keyed["batch"]["id"] == "{tenant-2}ob2"
    status, error = web_server.request("POST", f"{base}/jobs:batch", {
        "jobs": [], "batch": "ob3", "on_complete": {"topic": "t", "id": "mine"}})
    assert status == 422 and error["error"]["field"] == "on_complete"


def test_list_waiting_jobs(web_server: WebServer) -> None:
    """``GET .../jobs?state=waiting``: the jobs waiting for their parents, paged."""
    base = _q(web_server)
    assert web_server.request("POST", f"{base}/jobs", {"topic": "lw", "id": "lwp",
                                                       "delay": 600})[0] == 201
    for kid in ("lw1", "lw2", "lw3"):
        assert web_server.request("POST", f"{base}/jobs", {
            "topic": "lw", "id": kid, "after": ["lwp"]})[0] == 201
    found: list[str] = []
    cursor = None
    while True:
        query = f"{base}/jobs?state=waiting&topic=lw&limit=2" + (
            f"&cursor={cursor}" if cursor else "")
        status, page = web_server.request("GET", query, token="reader")
        assert status == 200, page
        assert all(job["state"] == "waiting" for job in page["jobs"])
        found.extend(job["id"] for job in page["jobs"])
        cursor = page["cursor"]
        if cursor is None:
            break
    assert sorted(found) == ["lw1", "lw2", "lw3"]
