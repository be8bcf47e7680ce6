"""Schedules without Redis: tick evaluation (cron in a time zone, DST days, every= anchoring),
the missed policies of the firing plan, and validation naming the field."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

import streamdelay as sd
from streamdelay.dispatch.schedule_firing import (
    GRACE_MS,
    LEAD_MS,
    MISSED_CAP,
    jitter_ms,
    plan_ticks,
)
from streamdelay.dispatch.schedule_spec import Record, define, parse_record
from streamdelay.dispatch.schedule_timing import Timing
from streamdelay.protocol.keys import partition_of


def ms(text: str, tz: str) -> int:
    """Epoch ms of a local wall time (first occurrence when ambiguous)."""
    return int(datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()) * 1000


def local(tick: int, tz: str) -> str:
    return datetime.fromtimestamp(tick / 1000, ZoneInfo(tz)).isoformat()


@pytest.mark.parametrize("tz, spring, autumn, expected", [
    # spring forward: 02:30 does not exist that night; the tick runs at 03:00, right after the jump
    # autumn back: 02:30 happens twice in Berlin (02:00-03:00 is repeated); the tick runs once,
    # at the first 02:30 (summer time). New York repeats 01:00-02:00, so its 02:30 is unambiguous.
    ("Europe/Berlin", "2026-03-28", "2026-10-24", [
        "2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00",
        "2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"]),
    ("America/New_York", "2026-03-07", "2026-10-31", [
        "2026-03-07T02:30:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00",
        "2026-10-31T02:30:00-04:00", "2026-11-01T02:30:00-05:00", "2026-11-02T02:30:00-05:00"]),
])
def test_daily_0230_on_dst_days(tz: str, spring: str, autumn: str, expected: list[str]) -> None:
    timing = Timing("30 2 * * *", None, tz)
    got = timing.upcoming(ms(f"{spring}T00:00:00", tz), 3)
    got += timing.upcoming(ms(f"{autumn}T00:00:00", tz), 3)
    assert [local(t, tz) for t in got] == expected
    # one tick per day, each strictly after the one before, also when starting inside the
    # repeated hour (02:45 of the second pass) the next tick is the next day's
    assert all(b > a for a, b in itertools.pairwise(got))
    if tz == "Europe/Berlin":
        second_pass = ms("2026-10-25T02:45:00", tz) + 3_600_000  # 02:45 CET, after the repeat
        assert local(timing.next_after(second_pass), tz) == "2026-10-26T02:30:00+01:00"


def test_every_hour_in_a_fall_back_night_ticks_each_real_hour() -> None:
    tz = "Europe/Berlin"
    ticks = Timing("0 * * * *", None, tz).upcoming(ms("2026-10-25T01:00:00", tz), 4)
    assert [b - a for a, b in itertools.pairwise(ticks)] == [3_600_000] * 3


def test_every_is_anchored_to_the_epoch_and_does_not_drift() -> None:
    timing = Timing(None, 60_000, "Europe/Berlin")
    assert timing.next_after(1_000_059_999) == 1_000_080_000
    assert timing.next_after(120_000) == 180_000
    assert timing.next_after(120_001) == 180_000
    assert timing.upcoming(120_000, 3) == [120_000, 180_000, 240_000]
    assert timing.last_before(300_000, 2, 0) == [180_000, 240_000]
    assert timing.last_before(300_000, 10, 200_000) == [240_000]


def test_cron_last_before_and_never_matching_cron() -> None:
    timing = Timing("*/15 * * * *", None, "UTC")
    assert timing.last_before(3_600_000, 3, 0) == [900_000, 1_800_000, 2_700_000]
    assert timing.last_before(3_600_000, 3, 1_000_000) == [1_800_000, 2_700_000]
    with pytest.raises(sd.ValidationError) as caught:
        Timing("0 0 30 2 *", None, "UTC")
    assert caught.value.field == "cron"


def record(spec_kw: dict[str, object], next_ms: int, last_ms: int = 0) -> Record:
    sdef = define("nightly", "t", None, ttr=60, max_attempts=3, **spec_kw)  # type: ignore[arg-type]
    raw = f"{next_ms}|{last_ms}|0|{sdef.version}||".encode() + sdef.encoded
    return parse_record(raw)


def test_on_time_firing_enqueues_the_ticks_within_the_lead() -> None:
    now = 10_000_500
    firing = plan_ticks(record({"every": 1}, 10_001_000), now)
    assert firing is not None
    assert firing.ticks == tuple(range(10_001_000, now + LEAD_MS + 1, 1000))
    assert firing.new_next == firing.ticks[-1] + 1000
    assert plan_ticks(record({"every": 1}, now + LEAD_MS + 1000), now) is None


@pytest.mark.parametrize("missed, kept", [("skip", 0), ("once", 1), ("all", 31)])
def test_missed_policies_after_a_gap(missed: str, kept: int) -> None:
    start, now = 1_000_000, 1_031_400  # no dispatcher from 1_000_000 to 1_031_400 (31.4 s)
    firing = plan_ticks(record({"every": 1, "missed": missed}, start), now)
    assert firing is not None
    cut = now - GRACE_MS
    missed_ticks = [t for t in firing.ticks if t < cut]
    assert len(missed_ticks) == kept == firing.recovered and firing.missed == 31
    if kept:
        assert missed_ticks[-1] == 1_030_000  # the latest missed one
    assert missed_ticks == sorted(set(missed_ticks))
    # not missed: from the first tick >= cut up to now + lead, each once
    assert [t for t in firing.ticks if t >= cut] == list(range(1_031_000, now + LEAD_MS + 1, 1000))


def test_missed_all_is_capped() -> None:
    firing = plan_ticks(record({"every": 1, "missed": "all"}, 0), 1_000_000_000)
    assert firing is not None
    assert len([t for t in firing.ticks if t < 1_000_000_000 - GRACE_MS]) == MISSED_CAP


def test_jitter_is_deterministic_and_bounded() -> None:
    values = {jitter_ms("n", t, 5000) for t in range(0, 100_000, 1000)}
    assert all(0 <= v <= 5000 for v in values) and len(values) > 50
    assert jitter_ms("n", 7000, 5000) == jitter_ms("n", 7000, 5000)
    assert jitter_ms("n", 7000, 0) == 0


def test_a_schedule_and_its_ticks_share_a_partition() -> None:
    for name in ("nightly", "a.b", "x-1"):
        home = partition_of(f"{name}@0", 16)
        assert {partition_of(f"{name}@{t}", 16) for t in range(0, 10**6, 7919)} == {home}
    assert partition_of("user@example.com", 16) == partition_of("user@example.com", 16)


def test_same_spec_same_version_changed_spec_other_version() -> None:
    a = define("n", "t", {"x": 1}, every=60, ttr=60, max_attempts=3)
    assert a.version == define("n", "t", {"x": 1}, every=timedelta(minutes=1), ttr=60,
                               max_attempts=3).version
    assert a.version != define("n", "t", {"x": 2}, every=60, ttr=60, max_attempts=3).version


@pytest.mark.parametrize("kwargs, field", [
    ({"name": "a@b", "cron": "* * * * *"}, "name"),
    ({"cron": "61 * * * *"}, "cron"),
    ({"cron": "* * * * *", "every": 5}, "cron"),
    ({}, "cron"),
    ({"every": 0.5}, "every"),
    ({"every": "5"}, "every"),
    ({"cron": "* * * * *", "tz": "Mars/Olympus"}, "tz"),
    ({"cron": "* * * * *", "missed": "sometimes"}, "missed"),
    ({"cron": "* * * * *", "jitter": -1}, "jitter"),
    ({"cron": "* * * * *", "topic": "a b"}, "topic"),
    ({"cron": "* * * * *", "ttr": 0}, "ttr"),
    ({"cron": "* * * * *", "max_attempts": 0}, "max_attempts"),
])
def test_bad_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    args = {"name": "n", "topic": "t", "ttr": 60, "max_attempts": 3, **kwargs}
    name, topic = args.pop("name"), args.pop("topic")
    with pytest.raises(sd.ValidationError) as caught:
        define(name, topic, None, **args)  # type: ignore[arg-type]
    assert caught.value.field == field
