"""Rate and concurrency limits per topic (docs/limits.md): set from the API and shown by stats,
then held by real ``streamdelay worker`` processes (tests/support/apps/limit_worker_app.py) across
the
fleet, including after a ``kill -9`` of a process holding leases."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.limits import Rate, TopicLimit, parse_rate
from tests.support.runs import overlaps, peaks, runs, server_us
from tests.support.soak import SOAK

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[2]


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``check`` until true or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def starts(out: Path) -> list[tuple[str, float, int]]:
    """``(job id, wall clock, pid)`` of every handler start the workers recorded."""
    if not out.exists():
        return []
    rows = []
    for line in out.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            rows.append((parts[0], float(parts[1]), int(parts[2])))
    return rows


class Fleet:
    """Worker processes of tests.support.apps.limit_worker_app on one queue."""

    def __init__(self, url: str, name: str, out: Path, sleep: float) -> None:
        self.env = {**os.environ, "LIMIT_APP_QUEUE": name, "LIMIT_APP_OUT": str(out),
                    "LIMIT_APP_URL": url, "LIMIT_APP_SLEEP": str(sleep)}
        self.url = url
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, n: int) -> list[subprocess.Popen[bytes]]:
        """Start ``n`` more worker processes."""
        new = [subprocess.Popen([sys.executable, "-m", "streamdelay", "worker",
                                 "tests.support.apps.limit_worker_app:worker", "--url", self.url,
                                 "--log-level", "warning"], env=self.env, cwd=ROOT)
               for _ in range(n)]
        self.procs += new
        return new

    def stop(self) -> None:
        """SIGTERM every live process and wait for it."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def fleet(redis_url: str, queue_name: str, tmp_path: Path) -> Iterator[Fleet]:
    """An empty fleet (its processes are stopped at the end)."""
    f = Fleet(redis_url, queue_name, tmp_path / "starts.txt", 0.0)
    try:
        yield f
    finally:
        f.stop()


def test_rates_parse_print_and_refuse_bad_input() -> None:
    assert parse_rate("100/s") == Rate(100, 1000)
    assert parse_rate(" 5 / m ") == Rate(5, 60_000)
    assert parse_rate("10/500ms") == Rate(10, 500)
    assert parse_rate("3/2s") == Rate(3, 2000)
    assert [str(parse_rate(r)) for r in ("100/s", "5/m", "1/h", "10/500ms", "3/2s")] == [
        "100/s", "5/m", "1/h", "10/500ms", "3/2s"]
    for bad in ("100", "0/s", "1/0s", "x/s", "5/d", "1/0.5ms", "1/25h", 100, None):
        with pytest.raises(sd.ValidationError) as err:
            parse_rate(bad)
        assert err.value.field == "rate"


def test_limit_is_kept_shown_by_stats_and_cleared(queue: sd.Queue) -> None:
    assert queue.limit("mail", rate="100/s", concurrency=3) is True
    assert queue.limit("mail", rate="100/s", concurrency=3) is False
    assert queue.limits() == {"mail": TopicLimit(Rate(100, 1000), 3)}
    row = queue.stats().topics["mail"]
    assert (row.rate, row.concurrency, row.leases) == ("100/s", 3, 0)
    assert queue.limit("mail", concurrency=2) is True  # each call sets the whole limit
    assert queue.limits() == {"mail": TopicLimit(None, 2)}
    assert queue.limit("mail", clear=True) is True
    assert queue.limits() == {}
    assert queue.stats().topics.get("mail") is None or queue.stats().topics["mail"].rate is None


def test_a_bare_limit_call_still_clears_but_says_it_is_deprecated(queue: sd.Queue) -> None:
    """``streamdelay limit Q T`` shows the limit; ``limit(t)`` cleared it: the CLI's meaning is
    kept, so the bare library call warns (docs/limits.md#one-call-one-meaning)."""
    queue.limit("mail", rate="5/s")
    with pytest.warns(DeprecationWarning, match=r"limit\('mail', clear=True\)") as caught:
        assert queue.limit("mail") is True
    assert caught[0].filename == __file__  # points at the caller's line
    assert queue.limits() == {}
    with pytest.raises(sd.ValidationError) as err:
        queue.limit("mail", rate="5/s", clear=True)
    assert err.value.field == "clear" and queue.limits() == {}


def test_the_async_face_takes_clear_too(redis_url: str, queue_name: str) -> None:
    async def run() -> dict[str, TopicLimit]:
        async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
            await aq.limit("mail", concurrency=2)
            with pytest.warns(DeprecationWarning) as caught:
                await aq.limit("other")
            assert caught[0].filename == __file__
            await aq.limit("mail", clear=True)
            return await aq.limits()

    import asyncio
    assert asyncio.run(run()) == {}


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"rate": "fast"}, "rate"), ({"concurrency": 0}, "concurrency"),
    ({"concurrency": True}, "concurrency"), ({"concurrency": 2.5}, "concurrency"),
])
def test_bad_limits_name_the_field_and_write_nothing(queue: sd.Queue, kwargs: dict[str, object],
                                                      field: str) -> None:
    queue.limit("other", rate="1/s")
    with pytest.raises(sd.ValidationError) as err:
        queue.limit("mail", **kwargs)  # type: ignore[arg-type]
    assert err.value.field == field
    assert list(queue.limits()) == ["other"]


def test_rate_holds_across_four_worker_processes(fleet: Fleet, redis_url: str, queue_name: str,
                                                 tmp_path: Path) -> None:
    """50/s measured over a 20 s window under `make soak`, 10 s in `make test`, after the first
    burst of a full bucket."""
    seconds = 20.0 if SOAK else 10.0
    jobs = 4000 if SOAK else 3000  # far more than the window starts: some must still wait
    q = sd.Queue(queue_name, url=redis_url)
    q.limit("limited", rate="50/s")
    fleet.start(4)
    q.enqueue_many([sd.JobSpec("limited", i, id=f"j{i}") for i in range(jobs)])
    out = tmp_path / "starts.txt"
    wait_for(lambda: len(starts(out)) >= 1, 30, "the first start")
    first = min(t for _, t, _ in starts(out))
    window = (first + 2.0, first + 2.0 + seconds)  # after the first burst (bucket starts full)
    wait_for(lambda: time.time() > window[1] + 0.5, seconds + 20, "the window to pass")
    rows = starts(out)
    inside = [t for _, t, _ in rows if window[0] <= t < window[1]]
    rate = len(inside) / (window[1] - window[0])
    print(f"measured {rate:.1f} starts/s over {seconds:.0f} s, 4 worker processes")  # with -s
    assert 45.0 <= rate <= 55.0, f"measured {rate:.1f}/s"
    assert len({pid for _, _, pid in rows}) >= 2  # the limit is shared, not one busy process
    assert len({i for i, _, _ in rows}) == len(rows)  # no job started twice
    assert q.stats().topics["limited"].ready > 0  # the rest waits in the stream, not retried
    infos = {f"j{i}": q.get(f"j{i}") for i in range(len(rows), jobs)}
    started = {i for i, _, _ in starts(out)}  # read after the gets: a slow machine moves on
    waiting = [info for job_id, info in infos.items() if job_id not in started]
    assert waiting and all(info is not None and info.attempts == 0 and info.state == "ready"
                           for info in waiting)


def test_concurrency_holds_across_processes_and_after_a_kill(fleet: Fleet, redis_url: str,
                                                             queue_name: str,
                                                             tmp_path: Path) -> None:
    client = fleet_client(redis_url)
    q = sd.Queue(queue_name, url=redis_url)
    q.limit("limited", concurrency=3)
    fleet.env["LIMIT_APP_SLEEP"] = "0.03"
    out = tmp_path / "starts.txt"
    first = fleet.start(1)[0]
    q.enqueue_many([sd.JobSpec("limited", "hang", id=f"hang{i}", ttr=2, max_attempts=1)
                    for i in range(3)])
    wait_for(lambda: len(starts(out)) >= 3, 30, "the hanging jobs to start")
    fleet.start(3)
    q.enqueue_many([sd.JobSpec("limited", i, id=f"j{i}") for i in range(150)])
    time.sleep(1.5)  # the three leases are held: nothing else starts
    assert len(starts(out)) == 3
    assert q.stats().topics["limited"].leases == 3
    assert int(client.get(f"{queue_name}:peak") or 0) == 3
    first.send_signal(signal.SIGKILL)
    killed = {str(first.pid): server_us(client)}  # its runs end here (tests/support/runs.py)
    first.wait(timeout=10)
    wait_for(lambda: len({i for i, _, _ in starts(out) if i.startswith("j")}) >= 150, 20,
             "the other jobs to run once the leases expired")
    wait_for(lambda: q.stats().topics["limited"].dead == 3, 30,
             "the killed jobs to be reclaimed (max_attempts=1: dead)")
    wait_for(lambda: q.stats().topics["limited"].leases == 0, 10, "handlers to end")
    found = runs(client, f"{queue_name}:runs", killed)
    assert peaks(found) == {"limited": 3}, overlaps(found, 3)  # on the server clock


def fleet_client(url: str) -> object:
    """A plain client on the test server."""
    import redis
    return redis.Redis.from_url(url)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real ``streamdelay`` command."""
    return subprocess.run([sys.executable, "-m", "streamdelay", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)


def test_cli_sets_shows_and_clears_a_limit_and_stats_shows_it(redis_url: str,
                                                              queue_name: str) -> None:
    done = cli("limit", queue_name, "mail", "--rate", "20/s", "--concurrency", "2",
               "--url", redis_url)
    assert done.returncode == 0 and done.stdout.strip() == "mail: rate 20/s, concurrency 2"
    shown = cli("limit", queue_name, "mail", "--url", redis_url, "--json")
    assert json.loads(shown.stdout) == {"topic": "mail", "changed": None, "rate": "20/s",
                                        "concurrency": 2, "key_rate": None,
                                        "key_concurrency": None}
    stats = cli("stats", queue_name, "--url", redis_url)
    assert "limit: mail 20/s, 0/2 running" in stats.stdout.splitlines()
    assert cli("limit", queue_name, "mail", "--clear", "--url", redis_url).stdout.strip() == (
        "mail: no limit")
    assert "limit:" not in cli("stats", queue_name, "--url", redis_url).stdout


@pytest.mark.parametrize("args", [["--rate", "lots"], ["--concurrency", "0"],
                                  ["--clear", "--rate", "1/s"]])
def test_cli_refuses_bad_limits_in_one_line(redis_url: str, queue_name: str,
                                            args: list[str]) -> None:
    done = cli("limit", queue_name, "mail", *args, "--url", redis_url)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_the_exporter_shows_limits_and_leases(redis_url: str, queue_name: str) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from streamdelay.metrics.queue_exporter import QueueCollector, exporter_queue

    queue = exporter_queue(queue_name, redis_url, None)
    try:
        queue.limit("mail", rate="5/m", concurrency=4)
        registry = CollectorRegistry()
        registry.register(QueueCollector(queue))
        text = generate_latest(registry).decode()
        labels = f'queue="{queue_name}",topic="mail"'
        assert f'streamdelay_queue_limit{{kind="concurrency",{labels}}} 4.0' in text
        rate = f'streamdelay_queue_limit{{kind="rate_per_second",{labels}}} 0.0833'
        assert rate in text
        assert f"streamdelay_queue_leases{{{labels}}} 0.0" in text
    finally:
        queue.close()


def test_take_gives_no_more_than_the_limit_and_every_settle_path_frees_the_lease(
        queue: sd.Queue) -> None:
    import asyncio

    from streamdelay.io.steps import run_step_sync
    from streamdelay.limits import parse_take, take_call
    from streamdelay.protocol.keys import PartitionKeys
    from streamdelay.protocol.scripts import script
    from tests.support.promoting import promote_due

    c = queue.client
    keys = PartitionKeys(queue.name, 0)

    def run(name: str, args: list[object]) -> object:
        return run_step_sync(c, script(name).call(keys.script_keys(), args))

    queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}", ttr=30, max_attempts=1 if i == 2 else 5)
                        for i in range(6)])
    queue.limit("t", concurrency=5)
    run("registerGroup", ["g", "t"])
    asyncio.run(promote_due(sd.Dispatcher(queue.config), keys, expected=6))
    first = parse_take(run_step_sync(c, take_call(keys, "g", "me", "t", 3)))
    assert (len(first.entries), first.reason) == (3, 0)
    second = parse_take(run_step_sync(c, take_call(keys, "g", "me", "t", 10)))
    assert (len(second.entries), second.reason) == (2, 2)  # the concurrency holds back
    assert 29_000 <= second.wait_ms <= 30_000  # until the earliest lease expires (ttr)
    assert c.zcard(keys.leases("t")) == 5
    taken = {f[b"id"].decode(): eid for eid, f in first.entries + second.entries}
    before = c.zscore(keys.leases("t"), taken["j0"])
    time.sleep(0.01)
    run("touchJobs", ["g", "me", 1, "t", taken["j0"]])  # a heartbeat moves the lease on
    assert c.zscore(keys.leases("t"), taken["j0"]) > before
    run("ackJobs", ["g", 0, 1, "t", "j0", taken["j0"], 0])
    run("failJob", ["g", "t", "j1", taken["j1"], 1000, "0", "boom", 0])  # retried
    run("failJob", ["g", "t", "j2", taken["j2"], 1000, "0", "boom", 0])  # dead: last attempt
    run("releaseJobs", ["g", "t", "j3", taken["j3"]])  # handed back at shutdown
    assert c.zcard(keys.leases("t")) == 1
    assert c.llen(keys.limit_wake("t")) == 1 + 4  # setting the limit, then one per freed lease
    run("requeueStuck", ["g", "t", "-", 100, 0, ""])  # the reclaim of a silent consumer
    assert c.zcard(keys.leases("t")) == 0
    assert queue.get("j2").state == "dead"  # type: ignore[union-attr]
    queue.limit("t", rate="2/h")
    rated = parse_take(run_step_sync(c, take_call(keys, "g", "me", "t", 10)))
    assert (len(rated.entries), rated.reason) == (2, 1)  # a full bucket of 2, then the rate
    assert 1_790_000 <= rated.wait_ms <= 1_800_000  # half an hour to the next token


def test_the_async_face_sets_reads_and_clears_limits(redis_url: str, queue_name: str) -> None:
    import asyncio

    async def run() -> tuple[bool, dict[str, TopicLimit], bool, dict[str, TopicLimit]]:
        async with sd.AsyncQueue(queue_name, url=redis_url) as aq:
            changed = await aq.limit("mail", rate=Rate(3, 2000), concurrency=7)
            limits = await aq.limits()
            cleared = await aq.limit("mail", clear=True)
            return changed, limits, cleared, await aq.limits()

    changed, limits, cleared, after = asyncio.run(run())
    assert changed and cleared and after == {}
    assert limits == {"mail": TopicLimit(Rate(3, 2000), 7)} and str(limits["mail"].rate) == "3/2s"


def test_a_read_waiting_when_a_limit_is_set_hands_the_topic_back(queue: sd.Queue) -> None:
    import asyncio

    worker = sd.Worker(queue, group="late", block=3.0, dispatch=True)
    running, peak, done = 0, 0, []

    @worker.handler("t")
    async def handle(job: sd.Job) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.2)
        running -= 1
        done.append(job.id)

    async def scenario() -> None:
        serving = asyncio.ensure_future(worker.serve())
        await asyncio.sleep(0.5)  # the plain read now blocks for 3 s on the unlimited topic
        queue.limit("t", concurrency=1)
        await asyncio.sleep(1.0)  # the worker has seen the limit; its read still waits
        queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}") for i in range(3)])
        deadline = time.monotonic() + 20
        while len(done) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        worker.stop()
        await serving

    asyncio.run(scenario())
    assert sorted(done) == ["j0", "j1", "j2"] and peak == 1
    assert all(info is None for info in map(queue.get, ["j0", "j1", "j2"]))  # acknowledged
