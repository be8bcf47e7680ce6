"""Durability across failover (docs/guarantees.md#durability): ``replicas=N`` makes every call
that creates or changes a job's fate answer only once N replicas have it (``WAIT`` in the same
pipeline), else ``NotDurable``; a retry is safe. Fast checks of the I/O-free part with recorded
replies, then a real primary with a real replica (stopped with SIGSTOP to make it miss)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.client import call_plans as plans
from streamdelay.client.enqueuing import enqueue_plan
from streamdelay.io.config import QueueConfig
from streamdelay.protocol.durability import (
    Durability,
    check_server,
    check_wait,
    fence,
    is_durable,
    server_version,
    step_calls,
)
from streamdelay.protocol.plan import EachCall
from streamdelay.protocol.scripts import script
from tests.support.redis_server import RedisServer, wait_until

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 0.3  # replica_timeout of the tests that make the replica miss


# --- the I/O-free part, with recorded replies ---------------------------------------------

def _first_step(plan: plans.Plan[object]) -> object:
    return next(plan)


def test_fate_changing_plans_mark_their_calls_and_reads_do_not() -> None:
    cfg = QueueConfig(name="q", url="redis://127.0.0.1:1/0")
    durable = [
        enqueue_plan(cfg, [sd.JobSpec("t", 1, id="a")]),
        plans.cancel_plan(cfg, "a"),
        plans.reschedule_plan(cfg, "a", 5, None),
    ]
    for plan in durable:
        assert is_durable(_first_step(plan))  # type: ignore[arg-type]
    for name in ("replayDead", "purgeDead"):  # dead replay / purge, past the topic lookup
        plan = (plans.dead_replay_plan(cfg, "t", None, None) if name == "replayDead"
                else plans.dead_purge_plan(cfg, "t", None))
        step = _first_step(plan)
        assert is_durable(step) and step_calls(step)[0].script.name == name  # type: ignore[arg-type]
    reads = [plans.get_plan(cfg, "a"), plans.stats_plan(cfg)]
    for plan in reads:
        assert not is_durable(_first_step(plan))  # type: ignore[arg-type]
    many = enqueue_plan(cfg, [sd.JobSpec("t", i, id=f"j{i}") for i in range(400)])
    step = _first_step(many)
    assert isinstance(step, EachCall) and is_durable(step) and len(step.calls) == 3


def test_wait_and_waitaof_replies_are_read_into_not_durable() -> None:
    call = script("cancelJob").call(["k"] * script("cancelJob").num_keys, ["a"], durable=True)
    wait = Durability(replicas=2, timeout_ms=500)
    assert wait.command().args == ("WAIT", 2, 500)
    check_wait(wait, 2, [call])
    check_wait(wait, 3, [call])
    with pytest.raises(sd.NotDurable) as caught:
        check_wait(wait, 1, [call])
    error = caught.value
    assert (error.acked, error.replicas) == (1, 2) and isinstance(error, sd.StreamdelayError)
    assert "cancelJob" in str(error) and "1 of 2 replicas" in str(error)
    assert "Retrying is safe" in str(error) and "idempotent by id" in str(error)
    aof = Durability(replicas=1, timeout_ms=100, local_fsync=True)
    assert aof.command().args == ("WAITAOF", 1, 1, 100)
    check_wait(aof, [1, 1], [call])
    with pytest.raises(sd.NotDurable, match="not fsynced"):
        check_wait(aof, [0, 1], [call])
    with pytest.raises(sd.NotDurable, match="0 of 1 replicas"):
        check_wait(aof, [1, 0], [call])
    with pytest.raises(sd.ConfigError, match="appendonly") as refused:
        check_wait(aof, Exception("ERR WAITAOF cannot be used when numlocal is set but "
                                  "appendonly is disabled."), [call])
    assert refused.value.field == "local_fsync"


def test_the_fence_before_wait_writes_a_key_in_the_partitions_slot() -> None:
    cfg = QueueConfig(name="orders", url="redis://127.0.0.1:1/0", partitions=4)
    step = _first_step(plans.cancel_plan(cfg, "a"))
    [call] = step_calls(step)  # type: ignore[arg-type]
    tag = call.keys[0][: call.keys[0].index("}") + 1]  # the partition of job "a"
    # a key of that slot, inside the ACL pattern sd:{orders#*}*, with commands it grants
    assert [command.args for command in fence([call])] == [
        ("HSET", f"{tag}:durable", "w", ""), ("PEXPIRE", f"{tag}:durable", 10_000)]


def test_waitaof_is_detected_from_the_server_version() -> None:
    assert server_version({"redis_version": "7.0.15"}) == (7, 0)
    assert server_version(b"# Server\r\nredis_version:7.2.4\r\nredis_mode:standalone\r\n") == (7, 2)
    check_server(Durability(1, 100, local_fsync=True), (7, 2))
    check_server(Durability(1, 100), (7, 0))  # plain WAIT: any supported server
    with pytest.raises(sd.ConfigError) as caught:
        check_server(Durability(1, 100, local_fsync=True), (7, 0))
    assert caught.value.field == "local_fsync"


@pytest.mark.parametrize(("options", "field"), [
    ({"replicas": -1}, "replicas"), ({"replicas": 1.5}, "replicas"),
    ({"replicas": True}, "replicas"), ({"replicas": 101}, "replicas"),
    ({"replica_timeout": 0}, "replica_timeout"), ({"replica_timeout": "1s"}, "replica_timeout"),
    ({"replicas": 1, "replica_timeout": 20.0}, "replica_timeout"),  # past the socket timeout
    ({"local_fsync": "yes"}, "local_fsync"),
])
def test_bad_durability_settings_name_their_field(options: dict[str, object], field: str) -> None:
    for face in (sd.Queue, sd.AsyncQueue):
        with pytest.raises(sd.ValidationError) as caught:
            face("q", url="redis://127.0.0.1:1/0", **options)
        assert caught.value.field == field, caught.value


def test_no_replicas_means_no_wait() -> None:
    assert QueueConfig(name="q", url="redis://127.0.0.1:1/0").durability is None
    # a short socket timeout is fine while nothing waits (the default replica_timeout is 1 s)
    assert QueueConfig(name="q", url="redis://127.0.0.1:1/0", socket_timeout=0.5).durability is None
    cfg = QueueConfig(name="q", url="redis://127.0.0.1:1/0", replicas=1, replica_timeout=0.25)
    assert cfg.durability == Durability(1, 250)


# --- a real primary with a real replica ---------------------------------------------------

class Pair:
    """A primary and one replica of it (``--replicaof``)."""

    def __init__(self) -> None:
        self.primary = RedisServer().start()
        self.replica = RedisServer("--replicaof", "127.0.0.1", str(self.primary.port)).start()
        with self.replica.client() as client:
            assert wait_until(lambda: client.info("replication")["master_link_status"] == "up")

    def stall(self) -> None:
        """SIGSTOP the replica: it acknowledges nothing until ``resume``."""
        assert self.replica.process is not None
        os.kill(self.replica.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT the replica and wait until it caught up with the primary."""
        assert self.replica.process is not None
        os.kill(self.replica.process.pid, signal.SIGCONT)
        with self.primary.client() as client:
            assert wait_until(lambda: client.wait(1, 100) >= 1, timeout=10)

    def stop(self) -> None:
        """Stop both servers."""
        if self.replica.process is not None:
            os.kill(self.replica.process.pid, signal.SIGCONT)
        self.replica.stop()
        self.primary.stop()




def _name() -> str:
    return f"q{uuid.uuid4().hex[:8]}"


def _make_dead(queue: sd.Queue, job_id: str) -> None:
    queue.enqueue("t", 1, id=job_id, max_attempts=1)
    worker = sd.Worker(queue, concurrency=1)

    @worker.handler("t")
    def fail(job: sd.Job) -> None:
        raise RuntimeError("dead on purpose")

    worker.run(until_idle=True)


@pytest.mark.core
def test_durable_calls_succeed_with_a_live_replica(pair: Pair) -> None:
    name = _name()
    with sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=5) as queue:
        assert queue.enqueue("t", 1, id="a", delay=60).created
        results = queue.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=60)
                                      for i in range(400)])  # three calls, one pipeline
        assert all(r.created for r in results)
        assert queue.reschedule("m1", delay=120) and queue.cancel("a")
        assert queue.enqueue("t", 2, id="m2", replace=True, delay=30).state == "delayed"
    with sd.Queue(f"{name}-dead", url=pair.primary.url, replicas=1, replica_timeout=5) as dead:
        _make_dead(dead, "d1")
        _make_dead(dead, "d2")
        assert dead.dead_replay(id="d1", delay=60) == 1 and dead.dead_purge(id="d2") == 1
    with pair.replica.client() as replica:  # every change is on the replica when they answer
        assert replica.exists(f"sd:{{{name}#0}}:meta")
        assert replica.hexists(f"sd:{{{name}#0}}:jobs", "m399")
        assert not replica.hexists(f"sd:{{{name}#0}}:jobs", "a")
        assert replica.hexists(f"sd:{{{name}-dead#0}}:jobs", "d1")
        assert not replica.hexists(f"sd:{{{name}-dead#0}}:jobs", "d2")

    async def concurrent() -> list[sd.EnqueueResult]:
        async with sd.AsyncQueue(name, url=pair.primary.url, replicas=1,
                                 replica_timeout=5) as aqueue:
            found = await asyncio.gather(*(aqueue.enqueue("t", i, id=f"x{i}", delay=60)
                                           for i in range(100)))  # coalesced rounds
            assert await aqueue.cancel("x0")
            return found

    assert all(r.created for r in asyncio.run(concurrent()))


@pytest.mark.core
def test_scripts_flushed_are_loaded_again_under_wait(pair: Pair) -> None:
    with sd.Queue(_name(), url=pair.primary.url, replicas=1, replica_timeout=5) as queue:
        queue.enqueue("t", 1, id="warm", delay=60)
        with pair.primary.client() as client:
            client.script_flush()
        assert queue.enqueue("t", 1, id="after-flush", delay=60).created
        assert queue.cancel("after-flush")


@pytest.mark.core
def test_a_stalled_replica_makes_durable_calls_fail_in_time_and_a_retry_is_safe(
    pair: Pair,
) -> None:
    name = _name()
    queue = sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=WAIT_S)
    queue.enqueue("t", 0, id="keep", delay=60)
    queue.enqueue("t", 0, id="drop", delay=60)
    errors: dict[str, sd.NotDurable] = {}
    pair.stall()
    try:
        began = time.monotonic()
        with pytest.raises(sd.NotDurable) as one:
            queue.enqueue("t", 1, id="a", delay=60)
        assert time.monotonic() - began < WAIT_S + 3  # within its timeout (generous slack)
        errors["one"] = one.value
        with pytest.raises(sd.NotDurable) as generated:
            queue.enqueue("t", 1, delay=60)
        errors["generated"] = generated.value
        with pytest.raises(sd.NotDurable) as many:
            queue.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=60) for i in range(300)])
        errors["many"] = many.value
        with pytest.raises(sd.NotDurable):
            queue.cancel("drop")
        with pytest.raises(sd.NotDurable):
            queue.reschedule("keep", delay=90)

        async def coalesced() -> list[object]:
            async with sd.AsyncQueue(name, url=pair.primary.url, replicas=1,
                                     replica_timeout=WAIT_S) as aqueue:
                return await asyncio.gather(*(aqueue.enqueue("t", i, id=f"x{i}", delay=60)
                                              for i in range(40)), return_exceptions=True)

        async_outcomes = asyncio.run(coalesced())
        # a read never waits: it answers while the replica is stalled
        assert queue.get("keep") is not None
    finally:
        pair.resume()
    assert errors["one"].job_ids == ("a",) and "[jobs: a]" in str(errors["one"])
    assert len(errors["generated"].job_ids) == 1  # a generated id is named: retry with it
    assert len(errors["many"].job_ids) == 300 and "and 295 more" in str(errors["many"])
    assert all(isinstance(o, sd.NotDurable) for o in async_outcomes)
    assert [o.job_ids for o in async_outcomes] == [  # type: ignore[union-attr]
        (f"x{i}",) for i in range(40)]
    # the retry, once the replica is back: nothing lost, nothing doubled
    assert not queue.enqueue("t", 1, id="a", delay=60).created  # it had been written
    assert not queue.enqueue("t", 1, id=errors["generated"].job_ids[0], delay=60).created
    again = queue.enqueue_many([sd.JobSpec("t", i, id=f"m{i}", delay=60) for i in range(300)])
    assert not any(r.created for r in again)
    assert not queue.cancel("drop")  # already gone: the first cancel was written
    assert queue.reschedule("keep", delay=90)
    stats = queue.stats().topics["t"]
    assert stats.delayed == 1 + 1 + 1 + 300 + 40  # keep, a, the generated one, m*, x*
    with pair.replica.client() as replica:
        assert replica.hlen(f"sd:{{{name}#0}}:jobs") == stats.delayed
    queue.close()


@pytest.mark.server("redis")  # Redis 7.0: no WAITAOF; on Valkey see below
def test_local_fsync_needs_waitaof_and_says_so(pair: Pair) -> None:
    with sd.Queue(_name(), url=pair.primary.url, replicas=1, local_fsync=True) as queue, \
            pytest.raises(sd.ConfigError) as caught:
        queue.enqueue("t", 1, id="a", delay=60)
    assert caught.value.field == "local_fsync" and "7.2" in str(caught.value)


@pytest.mark.core
def test_worker_side_never_waits(pair: Pair) -> None:
    """Acks and retries stay asynchronous: a stalled replica does not slow a worker down."""
    name = _name()
    with sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=5) as queue:
        queue.enqueue_many([sd.JobSpec("t", i, id=f"w{i}") for i in range(20)])
        seen: list[str] = []
        worker = sd.Worker(queue, concurrency=4)
        worker.handler("t")(lambda job: seen.append(job.id))
        pair.stall()
        try:
            began = time.monotonic()
            worker.run(until_idle=True)
            took = time.monotonic() - began
        finally:
            pair.resume()
    assert sorted(seen) == sorted(f"w{i}" for i in range(20))
    assert took < 5  # not one 5 s WAIT: the worker's calls carry none


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMDELAY_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=60)


def test_cli_replicas_option(pair: Pair) -> None:
    name, url = _name(), pair.primary.url
    done = _cli("enqueue", name, "t", "{}", "--id", "c1", "--delay", "1m", "--replicas", "1",
                "--url", url)
    assert done.returncode == 0, done.stderr
    bad = _cli("cancel", name, "c1", "--replicas", "-2", "--url", url)
    assert bad.returncode == 2 and "replicas" in bad.stderr and "Traceback" not in bad.stderr
    pair.stall()
    try:
        missed = _cli("cancel", name, "c1", "--replicas", "1", "--replica-timeout", "300ms",
                      "--url", url)
    finally:
        pair.resume()
    assert missed.returncode == 1, missed.stderr
    assert "not durable" in missed.stderr and "Retrying is safe" in missed.stderr
    assert len(missed.stderr.strip().splitlines()) == 1
    again = _cli("cancel", name, "c1", "--replicas", "1", "--url", url)
    assert again.returncode == 1 and "no job" in again.stderr  # the first cancel was written


def test_with_replicas_is_a_per_call_setting_on_the_same_pool(pair: Pair) -> None:
    name = _name()
    queue = sd.Queue(name, url=pair.primary.url)  # replicas=0: never waits
    queue.enqueue("t", 1, id="a", delay=60)
    durable = queue.with_replicas(1, replica_timeout=WAIT_S)
    assert durable.client is queue.client and durable.config.replicas == 1
    assert queue.config.replicas == 0
    with pytest.raises(sd.ValidationError) as bad:
        queue.with_replicas(-1)
    assert bad.value.field == "replicas"
    pair.stall()
    try:
        assert queue.enqueue("t", 1, id="b", delay=60).created  # the plain queue answers
        with pytest.raises(sd.NotDurable):
            durable.cancel("a")

        async def through_async() -> tuple[object, object]:
            async with sd.AsyncQueue(name, url=pair.primary.url) as aqueue:
                view = aqueue.with_replicas(1, replica_timeout=WAIT_S)
                plain = await aqueue.enqueue("t", 1, id="c", delay=60)
                waited = await asyncio.gather(view.enqueue("t", 1, id="d", delay=60),
                                              return_exceptions=True)
                await view.close()  # leaves the pool to aqueue
                assert (await aqueue.get("c")) is not None
                return plain, waited[0]

        plain, waited = asyncio.run(through_async())
    finally:
        pair.resume()
    assert isinstance(plain, sd.EnqueueResult) and isinstance(waited, sd.NotDurable)
    durable.close()  # leaves the pool to queue
    assert queue.get("a") is None and queue.get("d") is not None
    queue.close()


@pytest.mark.core
def test_a_retry_from_another_connection_still_waits_for_the_first_write(pair: Pair) -> None:
    """The retry of a NotDurable call made through another queue (another connection) writes
    nothing new (the job exists, or is gone already); its WAIT must still cover the first
    call's write, not answer at once on its own connection's older writes (checked on the
    Redis this suite runs: WAIT waits for the server's latest offset)."""
    name = _name()
    first = sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=WAIT_S)
    other = sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=WAIT_S)
    other.enqueue("t", 0, id="warm", delay=60)  # the other connection's write, confirmed
    first.enqueue("t", 0, id="gone", delay=60)
    pair.stall()
    try:
        with pytest.raises(sd.NotDurable):
            first.enqueue("t", 1, id="x", delay=60)
        with pytest.raises(sd.NotDurable):
            other.enqueue("t", 1, id="x", delay=60)  # created=False: nothing written
        with pytest.raises(sd.NotDurable):
            first.cancel("gone")
        with pytest.raises(sd.NotDurable):
            other.cancel("gone")  # found nothing: nothing written
    finally:
        pair.resume()
    assert not other.enqueue("t", 1, id="x", delay=60).created
    first.close()
    other.close()


def test_pause_resume_and_limits_wait_for_the_replicas(pair: Pair) -> None:
    """A pause, a resume or a limit change is a change of the jobs' fate too: under
    ``replicas=1`` it answers once the replica has it, else ``NotDurable`` (a failover could
    otherwise un-pause a topic or drop its limit); the retry is safe."""
    name = _name()
    paused, limits = f"sd:{{{name}#0}}:paused", f"sd:{{{name}#0}}:limits"
    queue = sd.Queue(name, url=pair.primary.url, replicas=1, replica_timeout=5)
    queue.enqueue("t", 0, id="warm", delay=60)
    with pair.replica.client() as replica:
        assert queue.pause("t") and replica.hexists(paused, "t")
        assert queue.limit("t", rate="5/s") and replica.hexists(limits, "t")
        assert queue.resume("t") and not replica.hexists(paused, "t")
        assert queue.limit("t") and not replica.hexists(limits, "t")
    short = queue.with_replicas(1, replica_timeout=WAIT_S)
    pair.stall()
    try:
        with pytest.raises(sd.NotDurable) as caught:
            short.pause("t")
        assert "setPaused" in str(caught.value)
        with pytest.raises(sd.NotDurable):
            short.limit("t", concurrency=2)

        async def on_async() -> None:
            async with sd.AsyncQueue(name, url=pair.primary.url, replicas=1,
                                     replica_timeout=WAIT_S) as aqueue:
                with pytest.raises(sd.NotDurable):
                    await aqueue.resume("t")
                with pytest.raises(sd.NotDurable):
                    await aqueue.pause("t")

        asyncio.run(on_async())
        cli = _cli("pause", name, "t", "--replicas", "1", "--replica-timeout", "300ms",
                   "--url", pair.primary.url)
        assert cli.returncode == 1 and "not durable" in cli.stderr, cli.stderr
        cli = _cli("limit", name, "t", "--rate", "1/s", "--replicas", "1",
                   "--replica-timeout", "300ms", "--url", pair.primary.url)
        assert cli.returncode == 1 and "not durable" in cli.stderr, cli.stderr
    finally:
        pair.resume()
    assert not queue.pause("t")  # written on the primary: the retry finds it so
    with pair.replica.client() as replica:
        assert replica.hexists(paused, "t")
    queue.close()
