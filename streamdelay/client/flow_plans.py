"""Workflows, the producer side (docs/workflows.md): jobs that wait for parents (``after=``),
chains and batches, as I/O-free plans over ``enqueueFlow``, ``linkChildren`` and ``openBatch``.

Each job with parents links to them with a fresh link token (``token_hex``): its refs in their
children sets carry it, so a hand-over counts only for this life of its id (docs/workflows.md#runs).

Plain jobs never come here: ``enqueue`` without ``after`` keeps its one-script path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from secrets import token_hex
from typing import Any

from ..base import validation
from ..base.errors import ValidationError
from ..base.flows import BatchInfo, BatchState
from ..base.models import EnqueueResult, JobSpec
from ..protocol.keys import PartitionKeys, partition_of, placement_name
from ..protocol.plan import Command, Commands, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import enqueue_row, field_map, text
from ..protocol.scripts import Arg, ScriptCall, script
from .enqueuing import PreparedJob, prepare_job
from .job_options import mark_staged_call, new_job_id

MAX_PARENTS = 1000  # per job (docs/workflows.md#limits)
OUTCOME_KEEP_MS = 3_600_000  # how long a partition keeps the outcome of an ended job
FLOW_BATCH = 100  # jobs per enqueueFlow call
FLOW_BYTES = 1 << 20
POLICIES = {"dead": "d", "run": "r"}
SUCCESS, COMPLETE = "@1", "@2"  # the callbacks' ids: <batch>@1, <batch>@2 (batch_home)


@dataclass
class FlowJob:
    """A validated job with its parents and the waiters to note on it."""

    job: PreparedJob
    parents: tuple[str, ...] = ()
    policy: str = "d"
    kids: list[str] = field(default_factory=list)  # refs '<partition>|<child>|<token>', '…|#batch'
    hints: list[str] = field(default_factory=list)  # per parent: '', 'l', 's', 'x', 'c'
    token: str = ""  # the link token of this enqueue (set by flow_plan for a job with parents)

    def ref(self) -> str:
        """This job's waiter ref, as its parents' children sets hold it."""
        return f"{self.job.partition}|{self.job.id}|{self.token}"


def check_after(after: object, job_id: str | None) -> tuple[str, ...]:
    """The parent ids of ``after``: a list of 1 to ``MAX_PARENTS`` job ids (duplicates counted
    once), none the job's own id (``ValidationError`` naming ``after``)."""
    if isinstance(after, str) or not isinstance(after, Iterable):
        raise ValidationError("after: give a list of job ids", field="after")
    ids: list[str] = []
    seen: set[str] = set()
    for value in after:
        try:
            parent = validation.job_id(value)
        except ValidationError as exc:
            raise ValidationError(f"after: {exc}", field="after") from None
        if parent == job_id:
            raise ValidationError(f"after: job {parent!r} cannot wait for itself",
                                  field="after", job_id=parent)
        if parent not in seen:
            seen.add(parent)
            ids.append(parent)
        if len(ids) > MAX_PARENTS:
            raise ValidationError(f"after: at most {MAX_PARENTS} parents per job",
                                  field="after")
    if not ids:
        raise ValidationError("after: give at least one job id (or leave it out)",
                              field="after")
    return tuple(ids)


def check_policy(on_parent_failure: object) -> str:
    """The script's letter for ``on_parent_failure``: ``"dead"`` (default) or ``"run"``."""
    if on_parent_failure not in POLICIES:
        raise ValidationError('on_parent_failure: "dead" or "run"', field="on_parent_failure")
    return POLICIES[str(on_parent_failure)]


def _flat(job: FlowJob) -> list[Arg]:
    kind, when, ttr, attempts, blob = (job.job.args[i] for i in (2, 3, 4, 5, 7))
    args: list[Arg] = [job.job.id, job.job.args[1], kind, when, ttr, attempts, blob, job.policy,
                       job.job.opts, job.token, len(job.parents)]
    args.extend(f"{hint}|{parent}" for hint, parent in zip(job.hints, job.parents, strict=True))
    args.append(len(job.kids))
    args.extend(job.kids)
    return args


def _result(job: FlowJob, value: Any) -> EnqueueResult:
    if type(value) is int:
        return EnqueueResult(job.job.id, value, True, "delayed")
    shown = text(value)
    if shown == "+w":
        return EnqueueResult(job.job.id, 0, True, "waiting")
    if shown == "+x":
        return EnqueueResult(job.job.id, 0, True, "dead")
    row = enqueue_row(shown)
    return EnqueueResult(job.job.id, row.due_ms, row.created, row.state)


def flow_plan(cfg: QueueSpec, jobs: Sequence[FlowJob]) -> Plan[list[EnqueueResult]]:
    """Enqueue ``jobs`` in order: a parent must be enqueued before (or earlier in ``jobs``
    than) its children. Parents of another partition are linked first (``linkChildren``:
    a parent the queue does not know is refused there, naming ``after``); then each
    partition's jobs go in bounded ``enqueueFlow`` calls, one pipeline. A job the write
    finds under its id (``created=False``: SPEC 3.6, nothing changes) or created dead waits
    for nothing: the links this call made for it go again (``_unlink_plan``)."""
    count = cfg.partitions
    new: dict[str, FlowJob] = {}
    links: dict[int, list[tuple[FlowJob, int]]] = {}
    for job in jobs:
        here = job.job.partition
        job.hints = []
        job.token = token_hex(8) if job.parents else ""
        for index, parent in enumerate(job.parents):
            there = partition_of(parent, count)
            if there == here:
                job.hints.append("")
            elif parent in new:  # new in this call: it carries the link itself
                new[parent].kids.append(job.ref())
                job.hints.append("l")
            else:
                job.hints.append("?")
                links.setdefault(there, []).append((job, index))
        new[job.job.id] = job
    if links:
        calls = []
        for there, pairs in links.items():
            args: list[Arg] = [OUTCOME_KEEP_MS]
            for job, index in pairs:
                args.extend((job.parents[index], job.ref()))
            calls.append(script("linkChildren").call(
                PartitionKeys(cfg.name, there).script_keys(), args, durable=True))
        replies = yield calls
        for (_, pairs), reply in zip(links.items(), replies, strict=True):
            for (job, index), found in zip(pairs, reply, strict=True):
                state = text(found)
                if state == "n":
                    raise ValidationError(
                        f"after: no such job {job.parents[index]!r}: never enqueued, or it "
                        f"ended before the queue kept outcomes or longer ago than it keeps "
                        f"them (docs/workflows.md)", field="after", job_id=job.parents[index])
                job.hints[index] = state
    results = yield from _write_plan(cfg, jobs)
    yield from _unlink_plan(cfg, jobs, results)
    return results


def _unlink_plan(cfg: QueueSpec, jobs: Sequence[FlowJob], results: Sequence[EnqueueResult]
                 ) -> Plan[None]:
    """Take back the links of parents of other partitions this call made (``linkChildren``,
    or a parent new in the call that carried the ref) for a job that waits for nothing: one
    found under its id (``created=False``) or created dead. One ``forwardOutcomes`` call per
    partition with ``'-'`` triples; nothing to do in the usual case. A producer that dies
    before it leaves refs of a token no job has: a hand-over they bring changes nothing."""
    by_partition: dict[int, list[Arg]] = {}
    for job, result in zip(jobs, results, strict=True):
        if not job.token or (result.created and result.state != "dead"):
            continue
        for hint, parent in zip(job.hints, job.parents, strict=True):
            if hint == "l":
                by_partition.setdefault(partition_of(parent, cfg.partitions), []).extend(
                    (job.ref(), parent, "-"))
    calls = [script("forwardOutcomes").call(PartitionKeys(cfg.name, p).script_keys(), args)
             for p, args in sorted(by_partition.items())]
    if calls:
        yield calls if len(calls) > 1 else calls[0]


def _write_plan(cfg: QueueSpec, jobs: Sequence[FlowJob]) -> Plan[list[EnqueueResult]]:
    tolerance = validation.delay_ms(cfg.past_tolerance)
    order: dict[int, list[FlowJob]] = {}
    for job in jobs:
        order.setdefault(job.job.partition, []).append(job)
    calls: list[ScriptCall] = []
    owners: list[list[FlowJob]] = []
    for partition, own in sorted(order.items()):
        keys = PartitionKeys(cfg.name, partition).script_keys()
        chunk: list[FlowJob] = []
        args: list[Arg] = [tolerance, OUTCOME_KEEP_MS]
        size = 0
        for job in own:
            flat = _flat(job)
            weight = job.job.size + 40 * (len(job.parents) + len(job.kids))
            if chunk and (len(chunk) >= FLOW_BATCH or size + weight > FLOW_BYTES):
                calls.append(script("enqueueFlow").call(keys, args, durable=True))
                owners.append(chunk)
                chunk, args, size = [], [tolerance, OUTCOME_KEEP_MS], 0
            chunk.append(job)
            args.extend(flat)
            size += weight
        calls.append(script("enqueueFlow").call(keys, args, durable=True))
        owners.append(chunk)
    # a staged job (priority other than 5, a key) of a partition other than 0 flags its topic in
    # partition 0 too, before its enqueue, in the same round trip (docs/keys.md#job-options)
    staged = {str(job.job.args[1]) for job in jobs if job.job.partition and job.job.staged}
    marks = [mark_staged_call(cfg.name, staged)] if staged else []
    replies = yield [*marks, *calls] if len(calls) + len(marks) > 1 else calls[0]
    if len(calls) + len(marks) == 1:
        replies = [replies]
    replies = replies[len(marks):]
    found: dict[str, EnqueueResult] = {}
    for chunk, reply in zip(owners, replies, strict=True):
        for job, value in zip(chunk, reply, strict=True):
            found[job.job.id] = _result(job, value)
    return [found[job.job.id] for job in jobs]


def chain_jobs(cfg: QueueSpec, specs: Iterable[JobSpec], on_parent_failure: str = "dead"
               ) -> list[FlowJob]:
    """The jobs of a chain: each after the one before (ids generated where none is given)."""
    policy = check_policy(on_parent_failure)
    jobs: list[FlowJob] = []
    for spec in _specs(specs):
        job = FlowJob(prepare_job(cfg, spec), policy=policy)
        if jobs:
            if job.job.id == jobs[-1].job.id:
                raise ValidationError(f"specs: job {job.job.id!r} follows itself",
                                      field="specs", job_id=job.job.id)
            job.parents = (jobs[-1].job.id,)
        jobs.append(job)
    if not jobs:
        raise ValidationError("specs: a chain needs at least one job", field="specs")
    return jobs


def _specs(specs: Iterable[JobSpec]) -> list[JobSpec]:
    if isinstance(specs, JobSpec) or not isinstance(specs, Iterable):
        raise ValidationError("specs: pass a list of JobSpec", field="specs")
    out = list(specs)
    for spec in out:
        if not isinstance(spec, JobSpec):
            raise ValidationError(f"specs: expected JobSpec, got {type(spec).__name__}",
                                  field="specs")
    return out


def batch_home(batch_id: str, partitions: int) -> int:
    """The partition of a batch's record and its callbacks (the one of ``<id>@1``)."""
    return partition_of(batch_id + SUCCESS, partitions)


def _callback(cfg: QueueSpec, spec: object, name: str, key: str | None) -> tuple[str, str]:
    """The stored form of a callback (``''`` for none) and its topic when its options make
    the topic staged (else ``''``). ``key``: the fairness key the batch id carries."""
    if spec is None:
        return "", ""
    if not isinstance(spec, JobSpec):
        raise ValidationError(f"{name}: a JobSpec or None", field=name)
    if spec.id is not None or spec.replace:
        raise ValidationError(f"{name}: a callback's id is derived from the batch's; leave id "
                              f"and replace out", field=name)
    if spec.key != key:  # its id, <batch>@1, carries the batch id's key (docs/workflows.md)
        raise ValidationError(
            f"{name}: key={spec.key!r}, but the batch id carries key {key!r}: a callback's id "
            f"is the batch's (<batch>@1), so both callbacks of a batch {{key}}rest take that "
            f"key (docs/workflows.md#callback-options)", field=name)
    job = prepare_job(cfg, spec)
    head = "|".join(str(job.args[i]) for i in (2, 3, 4, 5, 1))  # kind, when, ttr, max, topic
    blob = job.args[7]
    # options ride in front: 'o<priority>|<expires_ms>|<key>|' (includes/flow.lua)
    stored = ("o" + job.opts + "|" if job.opts else "") + head + "|" + (
        blob.decode("latin-1") if isinstance(blob, bytes) else str(blob))
    return stored, str(job.args[1]) if job.staged else ""


def _batch_id(batch_id: str | None, on_success: object, on_complete: object
              ) -> tuple[str, str | None]:
    """The batch's id and the fairness key it carries: a batch whose callbacks have
    ``key=K`` has the id ``{K}<id>`` (``{K}<fresh>`` without one), as a keyed job does."""
    keys = [spec.key for spec in (on_success, on_complete)
            if isinstance(spec, JobSpec) and spec.key is not None]
    if keys:
        key = validation.fairness_key(keys[0])
        return validation.keyed_job_id(key, batch_id, new_job_id()), key
    if batch_id is None:
        return new_job_id(), None
    if isinstance(batch_id, str) and batch_id.startswith("{"):  # a keyed batch's later call
        bid = validation.job_id(batch_id)
        return bid, None if on_success is None and on_complete is None else placement_name(bid)
    return validation.producer_job_id(batch_id), None


def batch_plan(cfg: QueueSpec, specs: Iterable[JobSpec], batch_id: str | None,
               on_success: object, on_complete: object, close: bool) -> Plan[BatchInfo]:
    """Open (or add to) a batch and enqueue its members; close it unless ``close=False``.
    Callbacks take every job option; a callback's topic its options make staged is flagged
    in partition 0 too, in the same round trip (docs/keys.md#job-options)."""
    bid, key = _batch_id(batch_id, on_success, on_complete)
    if not isinstance(close, bool):
        raise ValidationError("close: must be a bool", field="close")
    home = batch_home(bid, cfg.partitions)
    given = on_success is not None or on_complete is not None
    cb1, staged1 = _callback(cfg, on_success, "on_success", key)
    cb2, staged2 = _callback(cfg, on_complete, "on_complete", key)
    members = [FlowJob(prepare_job(cfg, spec)) for spec in _specs(specs)]
    for member in members:
        member.kids.append(f"{home}|#{bid}")
    keys = PartitionKeys(cfg.name, home).script_keys()
    opening = script("openBatch").call(
        keys, [bid, "1" if close else "0", OUTCOME_KEEP_MS, "1" if given else "0",
               _latin(cb1), _latin(cb2), *(m.job.id for m in members)], durable=True)
    staged = {t for t in (staged1, staged2) if t} if home else set()
    if staged:
        reply = (yield [mark_staged_call(cfg.name, staged), opening])[1]
    else:
        reply = yield opening
    if members:
        yield from _write_plan(cfg, members)
    return _batch_info(bid, reply, bool(cb1), bool(cb2))


def _latin(value: str) -> bytes:
    return value.encode("latin-1")


def _batch_info(bid: str, reply: Any, success: bool, complete: bool) -> BatchInfo:
    total, ok, bad, closed, fired, created = (int(v) for v in reply)
    state: BatchState = "done" if fired else ("running" if closed else "open")
    return BatchInfo(bid, total, ok, bad, total - ok - bad, state, created,
                     bid + SUCCESS if success else None, bid + COMPLETE if complete else None)


def batch_info_plan(cfg: QueueSpec, batch_id: str) -> Plan[BatchInfo | None]:
    """A batch's progress, or None when the queue has no such batch."""
    bid = validation.job_id(batch_id)
    prefix = PartitionKeys(cfg.name, batch_home(bid, cfg.partitions)).prefix
    reply = yield Command(("HMGET", prefix + "batch:" + bid, "total", "ok", "bad", "closed",
                           "fired", "created", "cb1", "cb2"))
    if reply[0] is None:
        return None
    return _batch_info(bid, [v or 0 for v in reply[:6]], bool(reply[6]), bool(reply[7]))


def after_job(cfg: QueueSpec, job: PreparedJob, after: object, on_parent_failure: object
              ) -> FlowJob:
    """The ``FlowJob`` of one ``enqueue(..., after=...)``."""
    if job.replaces:
        raise ValidationError("replace: not with after (a waiting job is not replaced)",
                              field="replace")
    return FlowJob(job, check_after(after, job.id), check_policy(on_parent_failure))


PARENT_STATES = {"w": "pending", "s": "succeeded", "x": "dead", "c": "cancelled"}


def relations_plan(cfg: QueueSpec, job_id: str
                   ) -> Plan[tuple[dict[str, str], list[str]]]:
    """The parents of a job enqueued with ``after`` and what each did, in id order (empty for
    any other job, or once the job ended), and the jobs and batches waiting for it (a batch as
    ``batch:<id>``), one round trip."""
    prefix = PartitionKeys(cfg.name, partition_of(job_id, cfg.partitions)).prefix
    deps, kids = yield Commands((Command(("HGETALL", prefix + "deps:" + job_id)),
                                 Command(("SMEMBERS", prefix + "children:" + job_id))))
    found = {k: PARENT_STATES.get(v, "pending") for k, v in field_map(deps).items()
             if k not in ("~", "#")}  # '#': the link token (docs/workflows.md#runs)
    # a ref is '<partition>|<child>|<token>' or '<partition>|#<batch>'; two lives of one id
    # (a link left by an earlier one) show once
    waiters = sorted({text(ref).split("|")[1] for ref in kids})
    return dict(sorted(found.items())), [
        "batch:" + w[1:] if w.startswith("#") else w for w in waiters]


def waiting_plan(cfg: QueueSpec) -> Plan[dict[str, int]]:
    """Jobs waiting for their parents, per topic, summed over partitions."""
    commands = tuple(Command(("HGETALL", PartitionKeys(cfg.name, p).prefix + "waiting"))
                     for p in range(cfg.partitions))
    replies = yield Commands(commands)
    counts: dict[str, int] = {}
    for reply in replies:
        for topic, value in field_map(reply).items():
            counts[topic] = counts.get(topic, 0) + int(value)
    return {topic: n for topic, n in counts.items() if n > 0}
