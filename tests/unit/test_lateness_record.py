"""The lateness record the dashboard reads (docs/dashboard.md#lateness): buckets, quantiles, the
recorder's batching and windows, pure; the scripts on a real Redis and a real worker filling it
are tests/integration/test_lateness_record.py."""

from __future__ import annotations

import asyncio

import pytest

from streamdelay.io.clients import async_client
from streamdelay.protocol.keys import PartitionKeys
from streamdelay.telemetry.lateness import (
    BOUNDS_MS,
    OVERFLOW,
    LatenessRecorder,
    LatenessWindow,
    bucket_of,
    parse_lateness,
    quantile_ms,
)

# --- pure ----------------------------------------------------------------------------------


def test_bucket_of_follows_prometheus_le() -> None:
    assert bucket_of(0) == 0 and bucket_of(-3) == 0
    assert bucket_of(0.5) == 0 and bucket_of(0.51) == 1
    assert bucket_of(60_000) == OVERFLOW - 1 and bucket_of(60_001) == OVERFLOW
    assert all(bucket_of(b) == i for i, b in enumerate(BOUNDS_MS))


def test_quantiles_interpolate_inside_the_bucket() -> None:
    counts = [0] * (OVERFLOW + 1)
    assert quantile_ms(counts, 0.5) is None
    counts[bucket_of(4)] = 100  # all in (3, 5] ms
    assert quantile_ms(counts, 0.5) == pytest.approx(4.0)
    assert quantile_ms(counts, 0.99) == pytest.approx(4.98)
    counts[OVERFLOW] = 100  # half the starts over a minute late
    assert quantile_ms(counts, 0.99) == BOUNDS_MS[-1]
    assert quantile_ms(counts, 0.25) == pytest.approx(4.0)


def test_recorder_packs_one_call_and_starts_again() -> None:
    rec = LatenessRecorder("q", "w1", keep_s=120)
    assert rec.take() is None
    for ms in (1, 1, 7, 90_000):
        rec.observe("a", ms)
    rec.observe("b", 0.2)
    call = rec.take()
    assert call is not None and call.script.name == "recordLateness"
    assert call.keys == (PartitionKeys("q", 0).lateness,)
    keep, flusher, seq, *triples = call.args
    assert (keep, flusher) == (120, "w1")
    assert triples == ["a", 1, 2, "a", 5, 1, "a", OVERFLOW, 1, "b", 0, 1]
    assert rec.take() is None
    rec.observe("a", 1)
    again = rec.take()
    assert again is not None and again.args[2] == int(seq) + 1


def test_a_staged_topics_starts_are_counted_per_priority_too() -> None:
    rec = LatenessRecorder("q", "w1")
    rec.observe("a", 1, priority="9")
    rec.observe("a", 1, priority="2")
    rec.observe("b", 1)  # a plain topic: nothing more
    call = rec.take()
    assert call is not None
    assert list(call.args[3:]) == ["a", 1, 2, "a#p2", 1, 1, "a#p9", 1, 1, "b", 1, 1]
    window = parse_lateness([0, 7, [b"1:a", b"2", b"1:a#p2", b"1", b"1:a#p9", b"1", b"1:b",
                                    b"1", b"1:a#px", b"5", b"1:#p3", b"5"]])
    assert set(window.topics) == {"a", "b"}  # priority fields are not topics
    assert window.merged("a")[1] == 2 and window.merged("a", priority="9")[1] == 1
    assert set(window.priorities) == {"a"} and set(window.priorities["a"]) == {"2", "9"}
    assert window.throughput("a")["started"] == [2]  # counted once per start


def test_window_parses_and_merges_minutes() -> None:
    reply = [120_500, 1, [], 2, [b"3:a", b"2", b"0:a", b"1", b"bad", b"9", b"99:a", b"1"]]
    window = parse_lateness(reply)
    assert window.now == 120_500 and window.minutes == (1, 2)
    assert window.topics["a"][0] == [0] * (OVERFLOW + 1)
    assert window.merged("a")[:4] == [1, 0, 0, 2]
    assert window.merged("a", last=1) == window.merged("a")
    assert window.merged("missing") == [0] * (OVERFLOW + 1)
    assert LatenessWindow(0, ()).merged("a", last=0) == [0] * (OVERFLOW + 1)


def test_a_flush_that_cannot_reach_redis_is_dropped_and_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    rec = LatenessRecorder("q", "w1")
    rec.observe("t", 1)
    client = async_client("redis://127.0.0.1:1/0", 1.0)  # nothing listens on port 1

    async def flush() -> None:
        await rec.flush(client, give_up_after=0.2)
        rec.observe("t", 1)
        await rec.flush(client, give_up_after=0.2)
        await client.aclose()

    asyncio.run(flush())
    assert rec.counts == {} and rec.take() is None  # not kept: memory stays bounded
    assert caplog.text.count("could not record lateness for the dashboard") == 1  # per streak
