"""Job options without a server (docs/keys.md#job-options): the ``opts`` value and the keyed id
``job_options`` makes, placement by key, which enqueue script a call goes to (plain jobs keep
the V2 scripts), the ``markStaged`` call sent first for a staged job on a partition other than
0, and reading a stored field back."""

from __future__ import annotations

import zlib
from dataclasses import fields
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.client.enqueue_one import prepared_one_plan
from streamdelay.client.enqueuing import (
    enqueue_chunks,
    prepare_job,
    prepare_values,
    round_plan,
    split_jobs,
)
from streamdelay.client.job_options import is_staged, job_options, parse_options
from streamdelay.io.config import QueueConfig
from streamdelay.protocol.keys import partition_of
from streamdelay.protocol.plan import EachCall
from streamdelay.protocol.scripts import ScriptCall

CFG = QueueConfig("orders", "redis://127.0.0.1:1/0")
WIDE = QueueConfig("orders", "redis://127.0.0.1:1/0", partitions=3)


def key_in(partition: int, partitions: int = 3) -> str:
    """A fairness key placed in ``partition``."""
    return next(f"k{n}" for n in range(1000)
                if zlib.crc32(f"k{n}".encode()) % partitions == partition)


@pytest.mark.parametrize(("given", "expected"), [
    ({}, ("x", "")),
    ({"priority": 5}, ("x", "")),
    ({"priority": 0}, ("x", "0||")),
    ({"expires": 1.0001}, ("x", "5|1001|")),
    ({"key": "acme"}, ("{acme}x", "5||acme")),
    ({"key": "acme", "id": "{acme}x"}, ("{acme}x", "5||acme")),
    ({"key": "a", "priority": 9, "expires": 60}, ("{a}x", "9|60000|a")),
])
def test_job_options_give_the_id_and_the_opts_value(given: dict[str, Any],
                                                    expected: tuple[str, str]) -> None:
    options = {"id": "x", "priority": None, "key": None, "expires": None, **given}
    assert tuple(job_options(options["id"], options["priority"], options["key"],
                             options["expires"])) == expected


def test_a_keyed_job_without_an_id_gets_its_key_and_32_hex() -> None:
    made, opts = job_options(None, None, "tenant-1", None)
    assert made.startswith("{tenant-1}") and len(made) == len("{tenant-1}") + 32
    assert int(made[len("{tenant-1}"):], 16) >= 0 and opts == "5||tenant-1"


def test_a_keyed_id_is_placed_by_its_key_alone() -> None:
    for partitions in (2, 3, 7):
        for key in ("a", "tenant-42", "x.y:z"):
            expected = zlib.crc32(key.encode()) % partitions
            assert partition_of(f"{{{key}}}anything", partitions) == expected
            assert partition_of(f"{{{key}}}tick@123", partitions) == expected


def test_staged_means_a_priority_other_than_5_or_a_key() -> None:
    assert [is_staged(v) for v in ("", "5||", "5|100|", "4||", "5||k", "5|9|k")] == [
        False, False, False, True, True, True]


def test_a_stored_field_reads_back_and_a_bad_one_reads_as_none() -> None:
    assert tuple(parse_options(b"7|1795483830001|tenant-42")) == (7, 1795483830001, "tenant-42")
    assert tuple(parse_options("5||")) == (5, None, None)
    for bad in (None, b"", b"x||", b"12||k", b"5|soon|k"):
        assert tuple(parse_options(bad)) == (5, None, None)


def test_job_spec_carries_the_options_to_prepare_values() -> None:
    spec = sd.JobSpec("t", 1, id="x", priority=2, key="k", expires=3)
    values = [getattr(spec, f.name) for f in fields(spec)]
    assert prepare_values(CFG, *values) == prepare_job(CFG, spec)
    assert prepare_job(CFG, spec).opts == "2|3000|k" and prepare_job(CFG, spec).id == "{k}x"


def names(calls: list[ScriptCall]) -> list[str]:
    """The script names of ``calls``."""
    return [call.script.name for call in calls]


def test_plain_batches_send_no_options_and_options_or_replace_set_the_flag() -> None:
    plain = [prepare_job(CFG, sd.JobSpec("t", i, id=f"p{i}")) for i in range(3)]
    mixed = [*plain, prepare_job(CFG, sd.JobSpec("u", 9, id="o"))]  # another topic
    keyed = prepare_job(CFG, sd.JobSpec("t", 9, id="k", key="acme"))
    replacing = prepare_job(CFG, sd.JobSpec("t", 9, id="r", replace=True))
    for jobs, flag, per_job in ((mixed, "0", 8), ([*plain, keyed], "1", 9),
                                ([*plain, replacing], "1", 9)):
        [chunk] = enqueue_chunks(CFG, jobs, 0, split_jobs(jobs))
        assert chunk.call.script.name == "enqueueJobs"
        assert len(chunk.call.args) == 3 + per_job * len(jobs)
        assert chunk.call.args[2] == flag
    # jobs sharing topic, when_kind, ttr and max_attempts: those once, then id, when_ms, blob
    [chunk] = enqueue_chunks(CFG, plain, 0, split_jobs(plain))
    assert chunk.call.args[:7] == (0, 0, "2", "t", "r", 60_000, 10)
    assert chunk.call.args[7:] == tuple(v for job in plain for v in (job.id, 0, job.args[7]))
    [chunk] = enqueue_chunks(CFG, [*plain, keyed], 0, split_jobs([*plain, keyed]))
    assert chunk.call.args[-1] == "5||acme" and chunk.call.args[3 + 8] == ""


def test_one_job_goes_to_enqueue_job_v3_with_its_options_last() -> None:
    job = prepare_job(CFG, sd.JobSpec("t", 1, id="x", priority=1))
    step = next(prepared_one_plan(CFG, job))
    assert isinstance(step, ScriptCall) and step.script.name == "enqueueJob"
    assert step.args[-1] == "1||" and len(step.args) == 9
    plain = next(prepared_one_plan(CFG, prepare_job(CFG, sd.JobSpec("t", 1, id="y"))))
    assert isinstance(plain, ScriptCall) and plain.script.name == "enqueueJob"


def test_a_staged_job_elsewhere_than_partition_0_flags_partition_0_first() -> None:
    away = prepare_job(WIDE, sd.JobSpec("t", 1, key=key_in(2)))
    home = prepare_job(WIDE, sd.JobSpec("t", 1, key=key_in(0)))
    expiring = prepare_job(WIDE, sd.JobSpec("t", 1, id=next(
        f"j{n}" for n in range(99) if partition_of(f"j{n}", 3)), expires=5))
    step = next(prepared_one_plan(WIDE, away))
    assert isinstance(step, list) and names(step) == ["markStaged", "enqueueJob"]
    assert step[0].keys == ("sd:{orders#0}:staged",) and step[0].args == ("t",)
    for alone in (home, expiring):  # partition 0's own script flags it; expiry only: no flag
        assert isinstance(next(prepared_one_plan(WIDE, alone)), ScriptCall)
    outcomes: list[Any] = [None] * 3
    first = next(round_plan(WIDE, [home, away, expiring], outcomes, isolate=False))
    assert isinstance(first, EachCall) and first.calls[0].script.name == "markStaged"
    assert {c.script.name for c in first.calls[1:]} == {"enqueueJobs"}
