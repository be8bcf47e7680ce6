"""The long-poll benchmark (``benchmarks/web/http_polls.py``, a section of ``make bench``) runs end
to end at a tiny size against a real ``streamdelay serve``: every job is delivered once and
acked, no poll refused, and the section carries its figures (no speed is judged here)."""

from __future__ import annotations

import contextlib
import math

import pytest

import streamdelay as sd
from benchmarks.web import http_polls
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.timeout(120)


def test_the_section_runs_and_every_job_is_acked_once(own_redis: RedisServer,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_polls, "redis_server", lambda: contextlib.nullcontext(own_redis))
    section = http_polls.run(polls=20, rate=40, seconds=1.0)
    assert section.correct
    assert [row[1] for row in section.rows] == ["20", "40"]  # jobs of the burst, the steady
    assert [check.met for check in section.verdicts] == [True]
    assert not math.isnan(section.figures["http_polls_rss_mib"])
    with sd.Queue(http_polls.QUEUE, url=own_redis.url) as queue:
        topic = queue.stats().topics[http_polls.TOPIC]
        assert (topic.delayed, topic.ready, topic.reserved, topic.dead) == (0, 0, 0, 0)
