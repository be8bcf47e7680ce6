"""Schedules on a real redis-server: idempotent declaring, the compare-and-set that makes a tick
fire once (racing dispatchers, kill -9 of dispatcher processes), the missed policies after a gap
without any dispatcher, a changed spec, pause/resume and unschedule (docs/schedules.md)."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import streamdelay as sd
from streamdelay.dispatch.schedule_firing import GRACE_MS, LEAD_MS, fire_due_plan, jitter_ms
from streamdelay.dispatch.schedule_plans import put_plan
from streamdelay.dispatch.schedule_spec import define, home_keys
from streamdelay.io.steps import run_step_sync
from streamdelay.protocol.codec import decode_blob, decode_body, parse_record
from streamdelay.protocol.keys import PartitionKeys
from tests.support.redis_server import wait_until
from tests.support.soak import SOAK

ROOT = Path(__file__).resolve().parents[2]


def tick_ids(q: sd.Queue, keys: PartitionKeys, name: str, topic: str) -> list[int]:
    """Tick times of every job of schedule ``name`` anywhere (delayed or in the stream)."""
    ids = [m.decode() for m in q.client.zrange(keys.delayed, 0, -1)]
    ids += [f[b"id"].decode() for _, f in q.client.xrange(keys.stream(topic))]
    return sorted(int(i.split("@")[1]) for i in ids if i.startswith(f"{name}@"))


def fire_now(q: sd.Queue, keys: PartitionKeys) -> int:
    """Run the dispatcher's firing plan once, by hand; returns the server time it planned at."""
    plan = fire_due_plan(keys)
    step = next(plan)
    reply = run_step_sync(q.client, step)
    now = int(reply[0])
    try:
        step = plan.send(reply)
        while True:
            step = plan.send(run_step_sync(q.client, step))
    except StopIteration:
        return now


def test_declaring_is_idempotent_and_listed(redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, partitions=4)
    assert q.schedule("nightly", "reports", {"kind": "daily"}, cron="30 2 * * *",
                      tz="Europe/Berlin", ttr=120, max_attempts=2, missed="once") is True
    assert q.schedule("nightly", "reports", {"kind": "daily"}, cron="30 2 * * *",
                      tz="Europe/Berlin", ttr=120, max_attempts=2, missed="once") is False
    assert q.schedule("beat", "ping", every=15) is True
    listed = q.schedules()
    assert [s.name for s in listed] == ["beat", "nightly"]
    nightly = listed[1]
    assert (nightly.topic, nightly.cron, nightly.tz, nightly.ttr, nightly.max_attempts,
            nightly.missed, nightly.body, nightly.paused) == (
        "reports", "30 2 * * *", "Europe/Berlin", 120.0, 2, "once", {"kind": "daily"}, False)
    assert listed[0].every == 15.0 and listed[0].next_tick % 15000 == 0
    ticks = q.next_ticks("beat", 3)
    assert [b - a for a, b in itertools.pairwise(ticks)] == [15000, 15000]
    assert q.unschedule("beat") is True and q.unschedule("beat") is False
    with pytest.raises(sd.ValidationError) as caught:
        q.schedule("bad", "t", every=5, missed="twice")  # type: ignore[arg-type]
    assert caught.value.field == "missed"
    with pytest.raises(sd.ScheduleNotFound):
        q.next_ticks("beat")

    async def twins() -> None:
        aq = sd.AsyncQueue(queue_name, url=redis_url, partitions=4)
        assert await aq.schedule("nightly", "reports", {"kind": "daily"}, cron="30 2 * * *",
                                 tz="Europe/Berlin", ttr=120, max_attempts=2,
                                 missed="once") is False
        assert [s.name for s in await aq.schedules()] == ["nightly"]
        assert await aq.pause_schedule("nightly") is True
        assert await aq.next_ticks("nightly") == []
        assert await aq.pause_schedule("nightly", paused=False) is True
        assert await aq.unschedule("nightly") is True
        await aq.close()

    asyncio.run(twins())
    q.close()


def test_racing_firings_advance_once(redis_url: str, queue_name: str) -> None:
    """Two dispatchers read the same next tick; only the first call advances it."""
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("race", "t", every=1)
    keys = home_keys(q.name, 1, "race")
    plans = [fire_due_plan(keys) for _ in range(3)]
    steps = [next(p) for p in plans]
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    reads = [run_step_sync(q.client, step) for step in steps]
    calls = [p.send(r) for p, r in zip(plans, reads, strict=False)]
    replies = [run_step_sync(q.client, call) for call in calls]
    assert sorted(int(status) for _, status in replies) == [0, 0, 1]
    ticks = tick_ids(q, keys, "race", "t")
    assert ticks and len(ticks) == len(set(ticks))
    again = run_step_sync(q.client, calls[0])  # a retried call (lost reply) writes nothing
    assert [int(v) for v in again] == [0, 0]
    assert tick_ids(q, keys, "race", "t") == ticks
    q.close()


def test_missed_policies_after_a_gap_without_dispatcher(redis_url: str, queue_name: str) -> None:
    """A 30 s gap with no dispatcher under `make soak`, ~4.5 s in `make test` (every=1;
    docs/schedules.md#missed-ticks)."""
    q = sd.Queue(queue_name, url=redis_url)
    for missed in ("skip", "once", "all"):
        q.schedule(f"m-{missed}", "t", every=1, missed=missed)  # type: ignore[arg-type]
    first = {s.name: s.next_tick for s in q.schedules()}
    time.sleep(30.0 if SOAK else 4.5)  # no dispatcher: ticks go by
    keys = home_keys(q.name, 1, "m-skip")
    now = fire_now(q, keys)
    cut = now - GRACE_MS
    on_time = list(range((cut + 999) // 1000 * 1000, now + LEAD_MS + 1, 1000))
    for missed in ("skip", "once", "all"):
        name = f"m-{missed}"
        ticks = tick_ids(q, keys, name, "t")
        gone_by = list(range(first[name], cut, 1000))
        assert len(gone_by) >= 3
        expected = {"skip": [], "once": gone_by[-1:], "all": gone_by}[missed] + on_time
        assert ticks == expected, missed
    q.close()


def test_unschedule_and_pause_cancel_ticks_not_yet_due(redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("soon", "t", every=1)
    keys = home_keys(q.name, 1, "soon")
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    fire_now(q, keys)
    ahead = tick_ids(q, keys, "soon", "t")
    assert ahead and all(q.get(f"soon@{t}") is not None for t in ahead)
    assert q.pause_schedule("soon") is True and q.pause_schedule("soon") is False
    paused = q.schedules()[0]
    assert paused.paused and tick_ids(q, keys, "soon", "t") == []
    assert paused.next_tick == ahead[0]  # a resume starts from the first cancelled tick
    fire_now(q, keys)
    assert tick_ids(q, keys, "soon", "t") == []  # paused: nothing fires
    assert q.pause_schedule("soon", paused=False) is True
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    fire_now(q, keys)
    assert tick_ids(q, keys, "soon", "t")
    assert q.unschedule("soon") is True
    assert tick_ids(q, keys, "soon", "t") == [] and q.schedules() == []
    q.close()


def _dispatcher(url: str, queue: str, partitions: int = 1) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "streamdelay", "dispatch", queue, "--url", url,
                             "--partitions", str(partitions)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_changing_the_spec_takes_effect_without_a_double_fire(
        redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url, partitions=3)  # the schedule's home partition
    q.schedule("beat", "t", {"v": 1}, every=1, missed="all")  # "all": no gap on a busy machine
    process = _dispatcher(redis_url, q.name, partitions=3)
    keys = home_keys(q.name, 3, "beat")
    try:
        assert wait_until(lambda: len(tick_ids(q, keys, "beat", "t")) >= 3, timeout=10)
        assert q.schedule("beat", "t", {"v": 2}, every=2, missed="all") is True
        changed_at = q.schedules()[0].last_tick
        assert wait_until(lambda: tick_ids(q, keys, "beat", "t")[-1] >= changed_at + 6000,
                          timeout=12)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    q.unschedule("beat")
    rows = []
    for _, fields in q.client.xrange(keys.stream("t")):
        blob = decode_blob(parse_record(fields[b"rec"]).blob)
        rows.append((int(fields[b"id"].decode().split("@")[1]),
                     decode_body(blob.fmt, blob.body)["v"]))
    ticks = [t for t, _ in rows]
    assert len(ticks) == len(set(ticks)) and ticks == sorted(ticks)
    old = [t for t, v in rows if v == 1]
    new = [t for t, v in rows if v == 2]
    assert old == list(range(old[0], old[-1] + 1, 1000)) and old[-1] == changed_at
    assert new and new[0] > old[-1] and new[0] - old[-1] <= 2000
    assert new == list(range(new[0], new[-1] + 1, 2000)) and new[0] % 2000 == 0
    q.close()


def test_five_dispatchers_with_kill9_fire_each_tick_once(
        redis_url: str, queue_name: str, tmp_path: Path) -> None:
    """Five dispatcher processes, two killed with SIGKILL and one started again, a worker (no
    embedded dispatcher) recording each tick of a 1-per-second schedule: ~64 s under
    `make soak`, ~16 s in `make test`."""
    scale = 4.0 if SOAK else 1.0
    out = tmp_path / "ticks.txt"
    env = {**os.environ, "SCHEDULE_APP_QUEUE": queue_name, "SCHEDULE_APP_OUT": str(out)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "streamdelay", "worker", "tests.support.apps.schedule_app:worker",
         "--url", redis_url, "--no-dispatch"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dispatchers = [_dispatcher(redis_url, queue_name) for _ in range(5)]
    q = sd.Queue(queue_name, url=redis_url)
    try:
        assert wait_until(lambda: out.exists() and len(out.read_text().split("\n")) > 3,
                          timeout=20)
        for victim in (dispatchers[0], dispatchers[1]):
            time.sleep(3.5 * scale)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=10)
        time.sleep(2.5 * scale)
        dispatchers.append(_dispatcher(redis_url, queue_name))
        time.sleep(5.5 * scale)
        assert q.pause_schedule("tick") is True
        last = q.schedules()[0].next_tick - 1000  # ticks are due up to here
        assert wait_until(lambda: f"tick@{last} " in out.read_text(), timeout=15)
    finally:
        for process in dispatchers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in dispatchers:
            process.wait(timeout=20)
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=30)
    handled = Counter(line.split()[0] for line in out.read_text().splitlines())
    ticks = sorted(int(job_id.split("@")[1]) for job_id in handled)
    assert ticks == list(range(ticks[0], last + 1, 1000)), err.decode()[-2000:]
    assert len(ticks) >= 14 * scale
    print(f"{len(ticks)} ticks, each handled once, over {len(ticks)} s")  # shown with -s
    assert set(handled.values()) == {1}, [k for k, v in handled.items() if v > 1]
    q.unschedule("tick")
    q.close()


def test_a_spec_change_racing_a_firing_reads_again(redis_url: str, queue_name: str) -> None:
    """``schedule`` read the record, a dispatcher fired in between: the change is refused
    (compare-and-set on version and next tick) and computed again from the new last tick."""
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("r", "t", every=1)
    keys = home_keys(q.name, 1, "r")
    sdef = define("r", "t", None, every=2, ttr=60, max_attempts=3)
    plan = put_plan(q.name, 1, sdef)
    read = next(plan)
    stale = run_step_sync(q.client, read)
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    fire_now(q, keys)  # the dispatcher wins the race
    fired = tick_ids(q, keys, "r", "t")
    call = plan.send(stale)
    assert [int(v) for v in run_step_sync(q.client, call)] == [-1]  # conflict
    try:
        step = plan.send([-1])
        while True:
            step = plan.send(run_step_sync(q.client, step))
    except StopIteration as done:
        assert done.value is True
    after = q.schedules()[0]
    assert after.every == 2.0 and after.next_tick > max(fired) and after.last_tick == max(fired)
    q.close()


def test_foreign_values_at_the_schedule_keys_are_refused_before_any_write(
        redis_url: str, queue_name: str) -> None:
    q = sd.Queue(queue_name, url=redis_url)
    keys = home_keys(q.name, 1, "x")
    q.enqueue("t", 1, id="due-now")
    q.client.set(keys.schedule_next, "not a sorted set")
    with pytest.raises(sd.StreamdelayError, match="written by another client"):
        q.schedule("x", "t", every=5)
    assert not q.client.exists(keys.schedules)

    async def promote() -> None:
        dispatcher = sd.Dispatcher(q.config)
        with pytest.raises(sd.StreamdelayError, match="written by another client"):
            await dispatcher.promote_once(keys)
        await dispatcher.close()

    asyncio.run(promote())
    assert q.get("due-now").state == "delayed"  # type: ignore[union-attr]
    q.client.delete(keys.schedule_next)
    assert q.schedule("x", "t", every=5) is True
    q.close()


def test_a_stale_dispatcher_firing_after_the_tick_ran_does_not_run_it_again(
        redis_url: str, queue_name: str) -> None:
    """A dispatcher read the schedule, stalled, and fires after the live one enqueued the same
    ticks and a worker ran and acknowledged them (their ids are free again): the compare-and-set
    on the next tick refuses the stale call, so each tick runs exactly once
    (docs/schedules.md#exactly-once-per-tick)."""
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("beat", "t", every=1)
    keys = home_keys(q.name, 1, "beat")
    wait_until(lambda: q.schedules()[0].next_tick - LEAD_MS <= time.time() * 1000, timeout=5)
    stale_plan = fire_due_plan(keys)
    stale_call = stale_plan.send(run_step_sync(q.client, next(stale_plan)))  # read, then stall
    fire_now(q, keys)  # the live dispatcher fires the same ticks
    fired = {f"beat@{t}" for t in tick_ids(q, keys, "beat", "t")}
    assert fired
    runs: Counter[str] = Counter()

    async def serve(until: float, *, stop_when_fired: bool) -> None:
        worker = sd.Worker(q, group="g", block=0.05, dispatch=False)
        dispatcher = sd.Dispatcher(q.config)  # promotes only: no schedule firing of its own

        @worker.handler("t")
        async def handle(job: sd.Job) -> None:
            runs[job.id] += 1

        async def promote_and_stop() -> None:
            while time.monotonic() < until and not (stop_when_fired and fired <= set(runs)):
                await dispatcher.promote_once(keys)
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # the acknowledgements go out
            worker.stop()

        await asyncio.gather(worker.serve(), promote_and_stop())
        await dispatcher.client.aclose()

    asyncio.run(serve(time.monotonic() + 10, stop_when_fired=True))
    assert set(runs) == fired and set(runs.values()) == {1}
    assert all(q.get(job_id) is None for job_id in fired)  # acknowledged: the ids are free
    made, status = run_step_sync(q.client, stale_call)  # the stalled dispatcher wakes up
    asyncio.run(serve(time.monotonic() + 1.0, stop_when_fired=False))  # what it made would run
    assert set(runs) == fired and set(runs.values()) == {1}, f"ticks run twice: {runs}"
    assert (int(made), int(status)) == (0, 0)
    q.close()


def test_a_pause_and_resume_within_a_ticks_jitter_keeps_that_tick(
        redis_url: str, queue_name: str) -> None:
    """Tick t has come (server time >= t) but its job waits for its jitter (due t + j): a pause
    then leaves it (only ticks not yet come are cancelled), so a resume right after cannot skip
    it (lua/pauseSchedule-6.lua: no tick is skipped)."""
    q = sd.Queue(queue_name, url=redis_url)
    q.schedule("jit", "t", every=2, jitter=2)
    keys = home_keys(q.name, 1, "jit")
    now = int(q.client.time()[0]) * 1000
    tick = next(t for t in q.next_ticks("jit", 10)
                if t - now > 200 and jitter_ms("jit", t, 2000) >= 1000)

    def server_ms() -> int:
        seconds, micros = q.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    wait_until(lambda: server_ms() >= tick - LEAD_MS, timeout=25)
    fire_now(q, keys)
    wait_until(lambda: q.get(f"jit@{tick}") is not None or fire_now(q, keys) < 0, timeout=5)
    wait_until(lambda: server_ms() >= tick + 20, timeout=5)  # t has come; t + j (>= 1 s) not
    assert q.pause_schedule("jit") is True
    assert q.pause_schedule("jit", paused=False) is True
    info = q.get(f"jit@{tick}")
    assert info is not None and info.state == "delayed", "the tick in its jitter was lost"
    assert info.due == tick + jitter_ms("jit", tick, 2000)
    assert q.schedules()[0].next_tick > tick  # and it is not enqueued twice
    q.close()
