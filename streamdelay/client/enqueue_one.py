"""Enqueue one job: the minimal one-job script when its id is free (docs/keys.md#the-one-job-
enqueue), else the batch logic of ``enqueuing.round_plan``."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..base import validation
from ..base.errors import NotDurable
from ..base.models import EnqueueResult
from ..io.lane import MISSED, Lane
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.scripts import ScriptCall, script
from .enqueuing import Outcome, PreparedJob, not_durable_for, round_plan
from .job_options import mark_staged_call


@lru_cache(maxsize=1024)
def _script_keys(queue: str, partition: int) -> tuple[str, ...]:
    return PartitionKeys(queue, partition).script_keys()


@lru_cache(maxsize=64)
def _tolerance_ms(past_tolerance: Any) -> int:
    """A queue's past tolerance in ms, validated once per value (the config's is hashable)."""
    return validation.delay_ms(past_tolerance)


def on_lane(lane: Lane, client: Any, cfg: QueueSpec, job: PreparedJob
            ) -> tuple[EnqueueResult | Plan[EnqueueResult], bool]:
    """``prepared_one_plan`` of a plain job (no options, no ``replace``) on a queue that agreed
    its partitions and waits for no replica, without a plan where it can: its ``enqueueJob``
    call goes on ``lane`` (io/lane.py) straight away. Returns the result when the job was
    written, else the plan that goes on: ``taken_plan`` when the id is taken, the whole
    ``prepared_one_plan`` when the lane stepped aside; and whether that plan may use the lane
    (not after it stepped aside: the call goes the ordinary way, as ``drive_sync`` sends it).
    A plan and its driver cost a measurable part of one enqueue call (docs/benchmarks.md,
    History 2026-11-29)."""
    reply = lane.call(client, one_job_call(cfg, job))
    if reply is MISSED:
        return prepared_one_plan(cfg, job), False
    if reply:  # the due time of the job written; 0: the id is taken, nothing written
        return EnqueueResult(job.id, int(reply), True, "delayed"), True
    return taken_plan(cfg, job), True


def one_job_call(cfg: QueueSpec, job: PreparedJob) -> ScriptCall:
    """The ``enqueueJob`` call of one new job (built positionally: it is on the path of every
    single enqueue, where ``Script.call``'s checks would be paid again)."""
    job_id, topic, kind, when, ttr_ms, attempts, _, blob = job.args  # no replace flag
    if job.opts:  # a job with options: a ninth ARGV, its options
        return ScriptCall(script("enqueueJob"), _script_keys(cfg.name, job.partition),
                          (_tolerance_ms(cfg.past_tolerance), job_id, topic, kind, when,
                           ttr_ms, attempts, blob, job.opts), True)
    return ScriptCall(script("enqueueJob"), _script_keys(cfg.name, job.partition),
                      (_tolerance_ms(cfg.past_tolerance), job_id, topic, kind, when, ttr_ms,
                       attempts, blob), True)


def prepared_one_plan(cfg: QueueSpec, job: PreparedJob) -> Plan[EnqueueResult]:
    """Enqueue one validated job: one ``enqueueJob`` call (the minimal one-job script) when
    its id is free.

    A taken id (an existing job or tombstone, or ``replace``) is sent again through
    ``enqueueJobs``, which has the whole logic: the fast script wrote nothing then
    (docs/keys.md#the-one-job-enqueue).
    """
    if not job.replaces:
        try:
            if job.partition and job.staged:  # flag partition 0 first, same round trip
                mark = mark_staged_call(cfg.name, [str(job.args[1])])
                due = (yield [mark, one_job_call(cfg, job)])[1]
            else:
                due = yield one_job_call(cfg, job)
        except NotDurable as exc:  # written, not confirmed by the replicas
            raise not_durable_for(exc, [job.id]) from exc
        if due:  # the due time of the job written; 0: the id is taken, nothing written
            return EnqueueResult(job.id, int(due), True, "delayed")
    return (yield from taken_plan(cfg, job))


def taken_plan(cfg: QueueSpec, job: PreparedJob) -> Plan[EnqueueResult]:
    """Enqueue one validated job through ``enqueueJobs``, which has the whole logic (a taken
    id, ``replace``): where ``prepared_one_plan`` goes when the one-job script wrote nothing."""
    found: list[Outcome | None] = [None]
    yield from round_plan(cfg, [job], found, isolate=False)
    outcome = found[0]
    if isinstance(outcome, NotDurable):
        raise not_durable_for(outcome, [job.id])
    if isinstance(outcome, Exception):
        raise outcome
    assert outcome is not None
    return outcome
