"""``prepare_values`` is ``prepare_job`` on the fields of a ``JobSpec`` (one validation core for
the library and the HTTP batch route), and ``AsyncQueue.enqueue_prepared`` sends prepared jobs
as ``enqueue_many`` does (docs/producer.md#enqueue_many)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

import streamdelay as sd
from streamdelay.client.enqueuing import prepare_job, prepare_values
from streamdelay.io.config import QueueConfig


def values_of(spec: sd.JobSpec) -> list[Any]:
    """The fields of ``spec``, in order (not ``astuple``: it would unpack a ``Backoff``)."""
    return [getattr(spec, f.name) for f in fields(spec)]


CFG = QueueConfig("orders", "redis://127.0.0.1:1/0")
SPECS = [
    sd.JobSpec("mail", {"a": 1}, delay=5, id="x"),
    sd.JobSpec("mail", b"raw", at=2_000_000_000, id="y", ttr=30, max_attempts=3,
               backoff=sd.Backoff(base=2, cap=60, jitter=False), headers={"k": "v"}),
    sd.JobSpec("mail", None, id="z", backoff=[1, 5], replace=True, max_wait=60),
]


@pytest.mark.parametrize("spec", SPECS)
def test_prepare_values_is_prepare_job(spec: sd.JobSpec) -> None:
    assert prepare_values(CFG, *values_of(spec)) == prepare_job(CFG, spec)


@pytest.mark.parametrize(("change", "field"), [
    ({"topic": "bad topic"}, "topic"), ({"id": ""}, "id"), ({"ttr": -1}, "ttr"),
    ({"replace": "yes"}, "replace"), ({"max_wait": 5}, "max_wait"),
])
def test_prepare_values_refuses_like_prepare_job(change: dict[str, object], field: str) -> None:
    values = {f.name: getattr(SPECS[0], f.name) for f in fields(SPECS[0])}
    values.update(change)
    with pytest.raises(sd.ValidationError) as refused:
        prepare_values(CFG, *values.values())
    assert refused.value.field == field




@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("body_bytes", [10, 20_000])
def test_split_jobs_cuts_as_partition_batches_does(partitions: int, body_bytes: int) -> None:
    """``split_jobs``' shortcut (one partition, small jobs) cuts exactly as the general
    ``partition_batches`` does, for every partition count and job size."""
    from streamdelay.client.enqueuing import ENQUEUE_BATCH, ENQUEUE_BYTES, split_jobs
    from streamdelay.protocol.batching import partition_batches

    cfg = QueueConfig(name="cut", url="redis://127.0.0.1:1/0", partitions=partitions)
    jobs = [prepare_job(cfg, sd.JobSpec("t", b"x" * body_bytes, id=f"j{i}")) for i in range(500)]
    for indexes in (None, list(range(0, 500, 3))):
        chosen = range(len(jobs)) if indexes is None else indexes
        general = [(p, list(b)) for p, b in partition_batches(
            chosen, lambda i: jobs[i].partition, ENQUEUE_BATCH, lambda i: jobs[i].size,
            ENQUEUE_BYTES)]
        assert [(p, list(b)) for p, b in split_jobs(jobs, indexes)] == general
