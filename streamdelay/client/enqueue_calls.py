"""The ``enqueueJobs`` calls of a round of prepared jobs and the results read from their
replies (docs/keys.md#enqueue-from-another-language): the packing half of ``enqueuing.py``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..base import validation
from ..base.models import EnqueueResult
from ..protocol.keys import partition_keys
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import enqueue_row
from ..protocol.scripts import Arg, ScriptCall, script
from .job_options import is_staged, mark_staged_call

Outcome = EnqueueResult | Exception  # a job's result, or the error of the call it rode in
Split = list[tuple[int, Sequence[int]]]  # (partition, indexes of its jobs) per enqueueJobs call


class PreparedJob(NamedTuple):
    """A validated job ready to be packed into ``enqueueJobs`` arguments (a named tuple: built
    once per job on the enqueue path, where a frozen dataclass costs several times more)."""

    id: str
    partition: int
    args: tuple[Arg, ...]  # id, topic, when_kind, when_ms, ttr_ms, max_attempts, replace, blob
    size: int  # bytes of job data it adds to a call (its eight values)
    opts: str = ""  # its options for the V3 scripts, '' for none (options.py)

    @property
    def when_kind(self) -> str:
        """``'r'`` (relative delay) or ``'a'`` (absolute ``at``)."""
        return str(self.args[2])

    @property
    def when_ms(self) -> int:
        """The delay in ms, or the absolute due time in epoch ms."""
        return int(self.args[3])

    @property
    def replaces(self) -> bool:
        """True when the job replaces one under its id (``replace=True``)."""
        return self.args[6] != "0"

    @property
    def staged(self) -> bool:
        """True when its options make its topic staged (a priority other than 5, or a key)."""
        return is_staged(self.opts)


@dataclass(frozen=True)
class EnqueueChunk:
    """One bounded ``enqueueJobs`` call and the indexes (into the prepared jobs) it carries."""

    call: ScriptCall
    owners: tuple[int, ...]


def shared_values(prepared: Sequence[PreparedJob], chunk: Sequence[int]
                  ) -> tuple[Arg, ...] | None:
    """The topic, when_kind, ttr and max_attempts every job of ``chunk`` shares, when they do
    and none has options or replaces one: its call then sends them once (flag ``2``)."""
    first = prepared[chunk[0]].args
    topic, kind, ttr, attempts = first[1], first[2], first[4], first[5]
    for index in chunk:
        job = prepared[index]
        args = job.args
        if (args[1] != topic or args[2] != kind or args[4] != ttr or args[5] != attempts
                or args[6] != "0" or job.opts):
            return None
    return topic, kind, ttr, attempts


def enqueue_chunks(
    cfg: QueueSpec, prepared: Sequence[PreparedJob], tolerance: int, split: Split
) -> list[EnqueueChunk]:
    """The bounded ``enqueueJobs`` calls for ``prepared``, as ``split_jobs`` cut them: a call
    whose jobs share their topic, when_kind, ttr and max_attempts, none with options or
    ``replace``, sends those once (ARGV[3] ``2``, then id, when_ms, blob per job: fewer values
    for Redis to make Lua strings of, docs/keys.md#enqueue-from-another-language); a call with
    a job that has options or replaces one sets the options flag (ARGV[3] ``1``: a ninth value
    per job, the options, which drop a replaced job's; docs/keys.md#job-options)."""
    keys = partition_keys(cfg.name, cfg.partitions)
    keep_done = validation.delay_ms(cfg.keep_done)
    enqueue_jobs = script("enqueueJobs")
    chunks: list[EnqueueChunk] = []
    for partition, chunk in split:
        args: list[Arg]
        shared = shared_values(prepared, chunk)
        if shared is not None:
            args = [tolerance, keep_done, "2", *shared]
            for index in chunk:
                job_args = prepared[index].args
                args += (job_args[0], job_args[3], job_args[7])
        elif any(prepared[i].opts or prepared[i].replaces for i in chunk):
            args = [tolerance, keep_done, "1"]
            for index in chunk:
                args.extend(prepared[index].args)
                args.append(prepared[index].opts)
        else:
            args = [tolerance, keep_done, "0"]
            for index in chunk:
                args.extend(prepared[index].args)
        chunks.append(EnqueueChunk(
            enqueue_jobs.call(keys[partition].script_keys(), args, durable=True), tuple(chunk)))
    return chunks


def staged_marks(cfg: QueueSpec, prepared: Sequence[PreparedJob],
                 chunks: Sequence[EnqueueChunk]) -> list[ScriptCall]:
    """The ``markStaged`` call (none or one) that flags in partition 0 the topics of the staged
    jobs ``chunks`` carry to other partitions (partition 0's own flag is its script's)."""
    topics = {str(prepared[i].args[1]) for chunk in chunks for i in chunk.owners
              if prepared[i].partition and prepared[i].staged}
    return [mark_staged_call(cfg.name, topics)] if topics else []


def fill_results(
    prepared: Sequence[PreparedJob], chunk: EnqueueChunk, reply: Any,
    outcomes: list[Outcome | None],
) -> None:
    """Each job of ``chunk`` gets its result in ``outcomes``, parsed from the call's reply: one
    value per job, or for a call of shared values whose every job was created, one number,
    the created time in ms (a job's due time: its ``at`` in ms, or created + its delay)."""
    if type(reply) is int:
        for index in chunk.owners:
            job = prepared[index]
            when = int(job.args[3])
            outcomes[index] = EnqueueResult(job.id, when if job.args[2] == "a" else reply + when,
                                            True, "delayed")
        return
    for index, value in zip(chunk.owners, reply, strict=True):
        if type(value) is int:  # the common value: a job created, its due time as it is
            outcomes[index] = EnqueueResult(prepared[index].id, value, True, "delayed")
        else:
            row = enqueue_row(value)
            outcomes[index] = EnqueueResult(prepared[index].id, row.due_ms, row.created,
                                            row.state)
