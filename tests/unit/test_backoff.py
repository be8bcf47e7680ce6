"""Retry delays (``backoff.retry_delay``): exponential with full jitter and a cap, or a list."""

from __future__ import annotations

import random
import statistics

import pytest

import streamdelay as sd
from streamdelay.io.config import QueueConfig
from streamdelay.protocol.backoff import retry_delay
from streamdelay.protocol.codec import blob_backoff, decode_blob, encode_blob


def test_default_is_exponential_from_one_second_with_jitter_capped_at_an_hour() -> None:
    default = QueueConfig(name="q", url="redis://127.0.0.1:1/0").backoff
    assert default == sd.Backoff(base=1.0, cap=3600.0, jitter=True)


def test_ceiling_doubles_per_attempt_then_stays_at_the_cap() -> None:
    exact = sd.Backoff(base=1.0, cap=3600.0, jitter=False)
    assert [retry_delay(exact, n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 32, 64]
    assert retry_delay(exact, 12) == 2048
    assert retry_delay(exact, 13) == 3600  # 4096 capped
    assert retry_delay(exact, 10_000) == 3600  # no overflow on absurd attempt numbers
    assert retry_delay(sd.Backoff(base=0.5, cap=10, jitter=False), 3) == 2.0
    assert retry_delay(exact, 0) == retry_delay(exact, -3) == 1  # attempt counts from 1


def test_full_jitter_spreads_uniformly_below_the_ceiling() -> None:
    rng = random.Random(11)
    samples = [retry_delay(sd.Backoff(), 4, rng) for _ in range(4000)]  # ceiling 8 s
    assert all(0.0 <= s <= 8.0 for s in samples)
    assert min(samples) < 0.1 and max(samples) > 7.9  # the whole range [0, ceiling] is used
    assert 3.8 < statistics.fmean(samples) < 4.2  # uniform: mean is half the ceiling
    assert len({round(s, 6) for s in samples}) > 3900  # not a handful of fixed values


def test_jitter_never_exceeds_the_cap() -> None:
    rng = random.Random(5)
    policy = sd.Backoff(base=1.0, cap=30.0)
    samples = [retry_delay(policy, n, rng) for n in range(1, 60) for _ in range(50)]
    assert max(samples) <= 30.0
    assert max(retry_delay(policy, 40, rng) for _ in range(500)) > 29.0


def test_list_schedule_gives_one_step_per_attempt_and_repeats_the_last() -> None:
    schedule = [0, 120, 600]
    assert [retry_delay(schedule, n) for n in (1, 2, 3, 4, 9)] == [0, 120, 600, 600, 600]
    assert retry_delay((1.5, 2.5), 1) == 1.5
    assert retry_delay([60], 7) == 60


def test_bad_backoff_is_refused_naming_the_field() -> None:
    for bad in ({"base": -1.0}, {"cap": float("inf")}, {"base": float("nan")}, {"cap": "5"}):
        with pytest.raises(sd.ValidationError) as caught:
            sd.Backoff(**bad)  # type: ignore[arg-type]
        assert caught.value.field == "backoff"
    with pytest.raises(sd.ValidationError, match="backoff"):
        QueueConfig(name="q", url="redis://127.0.0.1:1/0", backoff=[])


def test_per_job_backoff_survives_the_round_trip_through_the_job_blob() -> None:
    for policy in (sd.Backoff(base=2.0, cap=50.0, jitter=False), sd.Backoff(base=0.25),
                   [0.0, 120.0, 600.0]):
        assert blob_backoff(decode_blob(encode_blob("j", b"{}", {}, policy))) == policy
    assert blob_backoff(decode_blob(encode_blob("j", b"{}", {}, None))) is None
