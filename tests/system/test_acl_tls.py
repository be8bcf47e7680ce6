"""Locked doors: a Redis ACL user per queue, TLS end to end, no pickle/eval, no printed passwords.

The ACL line is read from docs/security.md, so the documented line is the tested one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import streamdelay as sd
from streamdelay.protocol.durability import fence
from streamdelay.protocol.event_entries import latest_events_plan
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.protocol.scripts import ScriptCall, script
from tests.support.redis_server import RedisServer, free_port, wait_until
from tests.system.test_cli import cli_env, command

ROOT = Path(__file__).resolve().parents[2]
SECURITY_DOC = ROOT / "docs" / "security.md"
DOC_QUEUE, DOC_PASSWORD = "orders", "CHANGE-ME"


async def queue_stats_ready(queue: sd.Queue) -> int:
    """Jobs ready on the topics ``pull`` and ``lim`` (the tick's topic not counted)."""
    topics = (await asyncio.to_thread(queue.stats)).topics
    return sum(topics[t].ready for t in ("pull", "lim") if t in topics)


def documented_acl_line(queue: str, password: str) -> list[str]:
    """The ``ACL SETUSER`` line of docs/security.md for ``queue``, split into arguments."""
    lines = [line for line in SECURITY_DOC.read_text().splitlines()
             if line.startswith("ACL SETUSER ")]
    assert len(lines) == 1, "docs/security.md must hold exactly one ACL SETUSER line"
    line = lines[0].replace(f"{{{DOC_QUEUE}#", f"{{{queue}#").replace(DOC_PASSWORD, password)
    line = line.replace(f"sd-{DOC_QUEUE} ", f"sd-{queue} ")
    return line.split()


@pytest.fixture
def acl_server() -> Iterator[RedisServer]:
    """A private server whose ACL this test may change."""
    with RedisServer() as server:
        yield server


def test_documented_acl_user_runs_everything_and_touches_nothing_else(
    acl_server: RedisServer,
) -> None:
    admin = acl_server.client()
    admin.execute_command(*documented_acl_line("shop", "s3cret-pw"))
    admin.acl_log_reset()
    url = f"redis://sd-shop:s3cret-pw@127.0.0.1:{acl_server.port}/0"
    queue = sd.Queue("shop", url=url, retry_for=1.0, keep_result=60, events=True)
    queue.enqueue("t", {"ok": 1}, id="fine")
    queue.enqueue("t", {"fail": 1}, id="poison", max_attempts=2, backoff=[0.01])
    queue.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=0.05) for i in range(3)])
    queue.limit("lim", rate="100/s", concurrency=1)  # the limited take and its waits run too
    queue.enqueue_many([sd.JobSpec("lim", i, id=f"l{i}") for i in range(3)])
    worker = sd.Worker(queue, reclaim_interval=0.2, block=0.2)
    worker.prune_idle, worker.prune_every = 0.0, 0.1  # the consumer pruning path runs too

    @worker.handler("t")
    def handle(job: sd.Job) -> None:
        if isinstance(job.body, dict) and job.body.get("fail"):
            raise RuntimeError("poisoned")

    @worker.handler("lim")
    async def limited(job: sd.Job) -> None:
        await asyncio.sleep(0.05)

    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
    assert worker.counts["handled"] == 7 and worker.counts["dead"] == 1
    assert queue.stats().topics["t"].dead == 1
    # results: kept by the settle scripts, read, and awaited (a wait that blocks, then ends)
    assert queue.result("fine").state == "succeeded"  # type: ignore[union-attr]
    assert queue.result("poison").state == "dead"  # type: ignore[union-attr]
    queue.enqueue("t", id="later", delay=300)
    with pytest.raises(sd.ResultTimeout):
        queue.result("later", timeout=0.05)
    assert queue.cancel("later")
    assert queue.result("later").state == "cancelled"  # type: ignore[union-attr]
    info = queue.get("poison")
    assert info is not None and info.state == "dead" and "poisoned" in (info.error or "")
    assert [d.id for d in queue.dead_list()] == ["poison"]
    assert queue.dead_replay(id="poison") == 1
    assert queue.reschedule("poison", delay=300) is True
    assert queue.claim("workers", min_idle=0).moved == []
    assert queue.cancel("poison") is True and queue.dead_purge() == 0
    # schedules: declared, listed, paused, resumed and fired by a dispatcher under this user
    assert queue.schedule("beat", "tick", {"n": 1}, every=1) is True
    assert queue.pause_schedule("beat") is True and queue.pause_schedule("beat", False) is True
    assert [s.name for s in queue.schedules()] == ["beat"]
    # the pull API: reserve / touch / ack / fail, plain and on the limited topic (the take,
    # and the waits of a drained and of a full limited topic)
    queue.enqueue("pull", 1, id="p1")
    queue.enqueue("lim", 1, id="l9")

    async def dispatch_and_pull() -> int:
        dispatcher = sd.Dispatcher(queue.config)
        keys = PartitionKeys("shop", 0)
        fired, deadline = 0, time.monotonic() + 10
        try:
            while fired == 0 or (await queue_stats_ready(queue)) < 2:
                assert time.monotonic() < deadline, "nothing became ready"
                fired += await dispatcher.fire_schedules(keys)
                await dispatcher.promote_once(keys)
                await asyncio.sleep(0.1)
        finally:
            await dispatcher.close()
        return fired

    assert asyncio.run(dispatch_and_pull()) >= 1
    [pulled] = queue.reserve("pull", wait=2)
    pulled.touch()
    pulled.touch(progress={"pct": 50})  # progress: written by touchJobs, read by get
    assert queue.get(pulled.id).progress == {"pct": 50}  # type: ignore[union-attr]
    assert pulled.fail("once", retry_delay=60) == "retried"
    [lim] = queue.reserve("lim", wait=2)
    assert queue.reserve("lim", wait=0.3) == []  # concurrency 1 is held: BLPOP wait
    lim.touch()
    lim.ack()
    assert queue.reserve("lim", wait=0.3) == []  # drained: XREAD wait
    queue.enqueue("t", 1, id="for-cli", delay=300)
    # lifecycle events: written by the scripts above, read with XREAD and (the dashboard's
    # panel) XREVRANGE
    kinds = {e.kind for e in queue.events(follow=False)}
    assert {"enqueued", "promoted", "started", "succeeded", "retried", "dead"} <= kinds, kinds
    assert run_plan_sync(queue, latest_events_plan("shop", 1, 5))[1]
    readers = [["events", "shop", "--json"],
               ["schedule", "list", "shop"],["stats", "shop", "--json"], ["get", "shop", "for-cli"],
               ["enqueue", "shop", "t", "{}", "--delay", "5m"], ["dead", "list", "shop"],
               ["claim", "shop", "--group", "workers"], ["pause", "shop", "t"],
               ["limit", "shop", "lim"],
               *[["jobs", "shop", "--state", s] for s in ("delayed", "ready", "reserved", "dead")]]
    # The readers run side by side; the cancel of the job `get` reads comes after them.
    for batch in (readers, [["cancel", "shop", "for-cli"], ["resume", "shop", "t"],
                            ["limit", "shop", "lim", "--clear"],
                            ["schedule", "pause", "shop", "beat"]],
                  [["schedule", "resume", "shop", "beat"]], [["schedule", "remove", "shop",
                                                              "beat"]]):
        procs = [subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=cli_env(url), cwd=ROOT) for args in batch]
        for args, proc in zip(batch, procs, strict=True):
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, (args, out, err)
    denied = [(e.get("reason"), e.get("object")) for e in admin.acl_log()]
    assert denied == [], f"the documented ACL is missing {denied}"

    plain = redis.Redis.from_url(url)
    for args in (("SET", "other", "1"), ("GET", "sd:{other#0}:jobs"),
                 ("HGET", "sd:{other#0}:jobs", "x"), ("FLUSHALL",), ("KEYS", "*"),
                 ("CONFIG", "GET", "*"), ("EVAL", "return 1", 0), ("SCRIPT", "FLUSH")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            plain.execute_command(*args)
    other = sd.Queue("other", url=url, retry_for=1.0)  # same prefix rules, another queue
    with pytest.raises(sd.ConfigError, match="permission denied"):
        other.enqueue("t", 1)
    assert admin.exists("sd:{other#0}:meta", "sd:{other#0}:jobs") == 0
    for q in (queue, other):
        q.close()
    plain.close()


def documented_replicas_grant() -> str:
    """What docs/security.md says producers with ``replicas=`` need beyond the ACL line."""
    found = re.search(r"Producers with `replicas=` \(or `local_fsync`\) also need `(\+[a-z]+)`",
                      SECURITY_DOC.read_text())
    assert found, "docs/security.md must say what producers with replicas= also need"
    return found.group(1)


def test_documented_acl_user_with_replicas_runs_durable_calls(acl_server: RedisServer) -> None:
    """A producer with ``replicas=1`` under the documented line plus the documented grant: every
    durable call (and its fence before ``WAIT``, docs/guarantees.md#durability-across-failover)
    runs without an ACL denial and is confirmed by the replica."""
    admin = acl_server.client()
    admin.execute_command(*documented_acl_line("shop", "s3cret-pw"), documented_replicas_grant())
    admin.acl_log_reset()
    url = f"redis://sd-shop:s3cret-pw@127.0.0.1:{acl_server.port}/0"
    with RedisServer("--replicaof", "127.0.0.1", str(acl_server.port)) as replica, \
            replica.client() as follower, \
            sd.Queue("shop", url=url, replicas=1, replica_timeout=5, retry_for=1.0) as queue:
        assert wait_until(lambda: follower.info("replication")["master_link_status"] == "up")
        assert queue.enqueue("t", 1, id="a", delay=60).created
        assert not queue.enqueue("t", 1, id="a", delay=60).created  # wrote nothing, fenced
        assert all(r.created for r in queue.enqueue_many(
            [sd.JobSpec("t", i, id=f"m{i}", delay=60) for i in range(3)]))
        assert queue.reschedule("a", delay=120) and queue.cancel("m0")
        assert queue.schedule("beat", "t", {"n": 1}, every=60) is True
        assert queue.dead_purge() == 0 and queue.dead_replay(id="none") == 0
        denied = [(e.get("reason"), e.get("object")) for e in admin.acl_log()]
        assert denied == [], f"the documented grant for replicas= is missing {denied}"
        assert follower.hexists("sd:{shop#0}:jobs", "a")  # confirmed means on the replica
        fence_key = "sd:{shop#0}:durable"
        assert admin.type(fence_key) == b"hash" and 0 < admin.pttl(fence_key) <= 10_000


# --- TLS -------------------------------------------------------------------------------------

def make_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throw-away CA and a server certificate for 127.0.0.1 (``openssl`` CLI)."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", "2", "-subj", "/CN=streamdelay-test-ca")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
            "server.csr", "-subj", "/CN=127.0.0.1")
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf")
    return directory / "ca.crt", directory / "server.crt", directory / "server.key"


@contextlib.contextmanager
def tls_redis(directory: Path) -> Iterator[tuple[int, Path]]:
    """A redis-server that speaks TLS only; yields its port and the CA file."""
    if shutil.which("openssl") is None:  # `make test` installs it: TLS must not go untested
        pytest.fail("the openssl CLI is not installed (needed to make test certificates)")
    ca, cert, key = make_certificates(directory)
    port = free_port()
    log = directory / "redis.log"
    proc = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(ca),
         "--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--dir", str(directory),
         "--logfile", str(log)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while "Ready to accept connections" not in (log.read_text() if log.exists() else ""):
            if proc.poll() is not None:
                out = (proc.stdout.read() if proc.stdout else b"").decode(errors="replace")
                if "tls" in out.lower() or "directive" in out.lower():
                    pytest.fail(f"redis-server is built without TLS support: {out.strip()[:200]}")
                raise RuntimeError(f"TLS redis-server did not start: {out}")
            assert time.monotonic() < deadline, "TLS redis-server did not start"
            time.sleep(0.02)
        yield port, ca
    finally:
        proc.kill()
        proc.wait(10)


def test_enqueue_and_worker_over_tls(tmp_path: Path) -> None:
    with tls_redis(tmp_path) as (port, ca):
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={ca}&ssl_cert_reqs=required"
        queue = sd.Queue("tls", url=url)
        ids = [r.id for r in queue.enqueue_many([sd.JobSpec("t", {"n": i}) for i in range(20)])]
        worker = sd.Worker(queue, block=0.2)
        seen: list[str] = []
        worker.handler("t")(lambda job: seen.append(job.id))
        asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
        assert sorted(seen) == sorted(ids)
        assert queue.stats().total.ready == 0
        queue.close()
        # verification is really on: without the CA the server's certificate is refused
        untrusted = sd.Queue("tls", url=f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required",
                             retry_for=0.5)
        with pytest.raises(sd.ConnectionFailed, match=r"(?i)certificate"):
            untrusted.stats()
        # and a plain-text client gets nowhere (the plain port is closed)
        with pytest.raises(sd.ConnectionFailed):
            sd.Queue("tls", url=f"redis://127.0.0.1:{port}/0", retry_for=0.5,
                     socket_timeout=0.5).stats()


# --- no pickle, no eval; no printed passwords ----------------------------------------------------

FORBIDDEN = re.compile(
    r"\bpickle\b|\bcPickle\b|\bmarshal\b|\bshelve\b|\bdill\b|\bcloudpickle\b"
    r"|(?<![\w.])eval\s*\(|(?<![\w.])exec\s*\(|(?<![\w.])compile\s*\(|__import__|yaml\.load\b"
    r"|\bloadstring\b|\bdofile\b|\bloadfile\b")


def test_no_pickle_or_eval_anywhere_in_the_package_or_scripts() -> None:
    sources = [*sorted((ROOT / "streamdelay").rglob("*.py")),
               *sorted((ROOT / "lua").rglob("*.lua"))]
    assert len(sources) > 20
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path in sources
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if FORBIDDEN.search(line)]
    assert hits == []
    assert FORBIDDEN.search("data = pickle.loads(raw)") and FORBIDDEN.search("eval(body)")
    assert not FORBIDDEN.search('("EVALSHA", call.script.sha)')  # the protocol call is fine


def test_passwords_never_printed(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()  # nothing listens there
    url = f"redis://someone:secret@127.0.0.1:{port}/0"
    caplog.set_level(logging.DEBUG)
    queue = sd.Queue("masked", url=url, retry_for=0.5)
    texts = [repr(queue), repr(queue.config), str(queue.config)]
    with pytest.raises(sd.ConnectionFailed) as caught:
        queue.enqueue("t", {"x": 1})
    exc: BaseException | None = caught.value
    while exc is not None:  # the whole chain, not only the outer message
        texts += [str(exc), repr(exc)]
        exc = exc.__cause__ or exc.__context__
    worker = sd.Worker(queue)
    worker.handler("t")(lambda job: None)
    texts.append(repr(worker))

    async def serve_briefly() -> None:
        asyncio.get_running_loop().call_later(1.5, worker.stop)
        await worker.serve()

    asyncio.run(serve_briefly())  # retries and logs while Redis is unreachable
    texts += [record.getMessage() for record in caplog.records]
    assert any("unavailable" in t or "unreachable" in t for t in texts)
    for bad_url in ("redis//someone:secret@127.0.0.1/0", f"redis://someone:secret@127.0.0.1:{port}/x?y=1",
                    f"redis://someone:secret@127.0.0.1:{port}0000/0"):
        with pytest.raises(sd.StreamdelayError) as refused:
            sd.Queue("masked", url=bad_url)
        texts.append(str(refused.value))
    cli = subprocess.run(command("stats", "masked", "--url", url), capture_output=True, text=True,
                         env=cli_env(None), cwd=ROOT, timeout=60)
    assert cli.returncode == 1
    texts += [cli.stdout, cli.stderr]
    leaked = [t for t in texts if "secret" in t]
    assert leaked == []
    assert "someone:***@" in repr(queue) and "someone:***@" in repr(worker)


def test_every_command_the_scripts_call_is_in_the_documented_acl_line() -> None:
    """A static cross-check of the ACL line against ``redis.call('CMD'...)`` in every script."""
    from streamdelay.protocol.scripts import load_scripts

    granted = {part[1:].lower() for part in documented_acl_line("q", "pw") if part[0] == "+"}
    fenced = PartitionKeys("q", 0).jobs  # the fence of durable calls uses the same grants
    assert {str(c.args[0]).lower() for c in fence([ScriptCall(script("cancelJob"), (fenced,),
                                                              ())])} <= granted
    for name, loaded in load_scripts().items():
        for match in re.finditer(r"redis\.p?call\('([A-Za-z]+)'(?:,\s*'([A-Za-z]+)')?",
                                 loaded.source):
            command, sub = match.group(1).lower(), (match.group(2) or "").lower()
            assert command in granted or f"{command}|{sub}" in granted, (name, command, sub)


def run_plan_sync(queue: sd.Queue, plan: Any) -> Any:
    """Drive one plan on the queue's client (as the dashboard does on its async one)."""
    from streamdelay.io.runner import drive_sync

    return drive_sync(queue.client, plan, 1.0)
