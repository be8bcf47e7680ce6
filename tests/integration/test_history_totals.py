"""The dashboard's totals and longer throughput window (docs/dashboard.md#totals): a real worker
runs jobs (some fail), its lateness flush adds the settled counts to the queue's per-day history
and totals, and ``readHistory`` answers them; the history is kept to its bound by the writer."""

from __future__ import annotations

import asyncio

import redis

import streamdelay as sd
from streamdelay.io.runner import drive_sync
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.telemetry.history import (
    HISTORY_DAYS,
    WINDOWS,
    History,
    ServerInfo,
    history_plan,
    server_plan,
)
from streamdelay.telemetry.lateness import LatenessRecorder


def _history(q: sd.Queue, window: str) -> History:
    found: History = drive_sync(q.client, history_plan(q.name, window), 5.0)
    return found


def _run(q: sd.Queue, ok: int, dead: int) -> None:
    q.enqueue_many([sd.JobSpec("good", i) for i in range(ok)]
                   + [sd.JobSpec("bad", i, max_attempts=1) for i in range(dead)])
    worker = sd.Worker(q, concurrency=4)
    worker.handler("good")(lambda job: None)

    @worker.handler("bad")
    def bad(job: sd.Job) -> None:
        raise RuntimeError("refused")

    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 120))  # flushes as it stops


def _day(client: redis.Redis) -> int:
    seconds, _ = client.time()
    return int(seconds) // 86400


def test_totals_today_and_every_window_count_what_a_worker_ran(queue: sd.Queue) -> None:
    client = redis.Redis.from_url(queue.config.url)
    day = _day(client)
    _run(queue, ok=7, dead=3)
    _run(queue, ok=2, dead=1)
    found = _history(queue, "15m")
    assert (found.total.ok, found.total.retried, found.total.dead) == (9, 0, 4)
    assert (found.total.processed, found.total.failed) == (13, 4)
    if _day(client) == day:  # not across a UTC midnight
        assert found.today == found.total
    for window, (points, step) in WINDOWS.items():
        shown = _history(queue, window)
        assert (len(shown.points), shown.step) == (points, step)
        assert sum(p.ok for p in shown.points) == 9, window
        assert sum(p.dead for p in shown.points) == 4, window
        assert shown.series()["dead"][-2:] != [0, 0], window  # the latest points


def test_the_history_is_kept_to_its_bound_by_the_writer(queue: sd.Queue) -> None:
    client = redis.Redis.from_url(queue.config.url)
    base = PartitionKeys(queue.name, 0).lateness
    day = _day(client)
    stale = f"{base}:day:{day - HISTORY_DAYS - 1}"  # past the bound, left without an expiry
    kept = f"{base}:day:{day - HISTORY_DAYS + 1}"  # inside the 7 days
    old_minute = (day - HISTORY_DAYS - 1) * 1440 + 5
    client.hset(stale, mapping={f"{old_minute}:ok": 50, f"h{old_minute // 60}:ok": 50})
    client.hset(kept, mapping={f"h{(day - HISTORY_DAYS + 1) * 24 + 3}:dead": 5})
    recorder = LatenessRecorder(queue.name, "w1")
    recorder.settled("t", "ok")
    asyncio.run(_flush(queue, recorder))
    assert not client.exists(stale)  # deleted by the writer
    today = f"{base}:day:{day}"
    seconds, _ = client.time()
    ttl = client.ttl(today)
    # expires 7 days after its day ends: never more than 8 days from now
    assert 0 < ttl <= (day + 1 + HISTORY_DAYS) * 86400 - int(seconds) + 1
    assert ttl > HISTORY_DAYS * 86400 - 5
    week = _history(queue, "7d")
    assert sum(p.ok for p in week.points) == 1  # the stale day is not counted
    # six days back at 03:00 is at most 6 * 24 + 23 - 3 < 168 hours ago: in the window
    assert sum(p.dead for p in week.points) == 5
    # the field count of a day hash is bounded: one minute and one hour field per outcome
    assert client.hlen(today) == 2


async def _flush(queue: sd.Queue, recorder: LatenessRecorder) -> None:
    async with sd.AsyncQueue(queue.name, url=queue.config.url) as q:
        await recorder.flush(q.client)


def test_server_info_answers_the_version_and_memory(queue: sd.Queue) -> None:
    client = redis.Redis.from_url(queue.config.url)
    info: ServerInfo = drive_sync(queue.client, server_plan(), 5.0)
    assert info.version == client.info("server")["redis_version"]
    assert info.used_memory.endswith(("K", "M", "G", "B"))
    assert info.peak_memory != "?"


def test_a_user_without_info_gets_the_totals_without_the_redis_line(queue: sd.Queue) -> None:
    """The per-queue ACL of docs/security.md has no ``+info``: the card drops that line only."""
    from streamdelay.web.dashboard.totals import totals_context

    client = redis.Redis.from_url(queue.config.url)
    user = f"noinfo{queue.name[-6:]}"
    client.acl_setuser(user, enabled=True, reset=True, passwords=["+pw"], keys=["*"],
                       channels=["*"], commands=["+@all", "-info"])
    _run(queue, ok=2, dead=0)
    url = queue.config.url.replace("redis://", f"redis://{user}:pw@", 1)

    async def read() -> dict[str, object]:
        async with sd.AsyncQueue(queue.name, url=url) as q:
            return await totals_context(q, "1h")

    try:
        card = asyncio.run(read())
    finally:
        client.acl_deluser(user)
    assert card["server"] is None
    history = card["history"]
    assert isinstance(history, History) and history.total.ok == 2
    assert isinstance(card["workers"], int)  # the fleet read is allowed
    assert 'data-ok="2"' in str(card["chart"])
