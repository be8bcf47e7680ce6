"""The HTTP benchmark (``benchmarks/web/http_bench.py``, a section of ``make bench``) runs end to
end at a tiny size against a real ``streamdelay serve`` and redis-server, and does what it claims:
every enqueued job is in Redis, every reserved one acked. No figure is judged here (speed lives
in the benchmark's report); the load generator and the profile summary are checked directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

import pytest

import streamdelay as sd
from benchmarks.core.harness import LISTED_TARGET
from benchmarks.web import http_bench, http_profile
from benchmarks.web.http_load import close_all, drive, open_all
from tests.support.redis_server import RedisServer, free_port

pytestmark = pytest.mark.timeout(120)


def test_the_section_runs_and_its_jobs_reach_redis(own_redis: RedisServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny run: the table has every row, the three targets are judged (met or not, never
    "not measured"), and the jobs the HTTP steps enqueued and acked are so in Redis."""
    monkeypatch.setattr(http_bench, "redis_server", lambda: contextlib.nullcontext(own_redis))
    # 300 single requests: ~40 ms of server CPU, a few clock ticks (/proc counts in 10 ms
    # ticks: 40 requests could read 0)
    single = 300
    section = http_bench.run(single=single, batches=2, backlog=30, pairs=20, connections=4)
    assert [row[0] for row in section.rows][:4] == [
        "bare uvicorn, no-op ASGI app (ceiling)", "HTTP enqueue, 1 job per request",
        f"HTTP enqueue, batch route ({http_bench.BATCH:,} per request)",
        "reserve + ack (1 consumer, count 1)"]
    assert len(section.verdicts) == 3 and all(v.met is not None for v in section.verdicts)
    assert all(v.key.startswith(LISTED_TARGET) for v in section.verdicts)  # in "Targets"
    for name in ("http_enqueue_single", "http_enqueue_batch", "http_pair_p99_ms",
                 "http_bare", "http_lib_async", "http_lib_many", "http_single_cpu_us"):
        assert not math.isnan(section.figures[name]) and section.figures[name] > 0, name
    with sd.Queue(http_bench.QUEUE, url=own_redis.url) as queue:
        stats = queue.stats().topics
    # warm-up (as many requests as the run, at most 20 per connection) and the run itself
    warm_up = min(single, 4 * 20)
    assert stats[http_bench.TOPIC].delayed == warm_up + single + 2 * 2 * http_bench.BATCH
    ready = stats[http_bench.READY_TOPIC]
    assert (ready.ready, ready.reserved, ready.delayed) == (30 + 100, 0, 0)  # 20 acked


def test_load_generator_reads_every_answer_shape() -> None:
    """Answers are read whole by Content-Length over keep-alive connections (every request
    on a connection after the first reads the right answer), statuses are counted."""
    port = free_port()
    with http_bench.bare_stack(port):
        async def bare() -> list[tuple[int, bytes]]:
            conns = await open_all("127.0.0.1", port, 2)
            try:
                result = await drive(conns, 10, "POST", "/", lambda i: b'{"n":%d}' % i)
                assert result.statuses == {201: 10} and len(result.latencies_ms) == 10
                return [await conns[0].request("POST", "/", b"{}")]
            finally:
                await close_all(conns)
        assert asyncio.run(bare()) == [(201, b'{"id":"x","due":1,"created":true}')]


def test_profile_summary_groups_samples_by_package() -> None:
    """py-spy's collapsed stacks are summed by the package of the innermost frame, and each
    stage counts the samples that pass through it."""
    collapsed = "\n".join([
        "run (uvicorn/server.py:1);handle (litestar/routes/http.py:2);enqueue "
        "(streamdelay/client/queue.py:3);send (redis/asyncio/connection.py:4) 6",
        "run (uvicorn/server.py:1);handle (litestar/routes/http.py:2) 3",
        "_worker (concurrent/futures/thread.py:81) 1",
    ])
    assert http_profile.by_package(collapsed) == [("redis", 0.6), ("litestar", 0.3),
                                                 ("concurrent", 0.1)]
    stages = http_profile.by_stage(collapsed)
    assert stages["litestar"] == 0.9 and stages["redis-py"] == 0.6
    assert stages["the streamdelay library (producer, plans, Redis I/O)"] == 0.6
