"""One error tree for streamdelay: every failure a caller can see is a ``StreamdelayError``."""

from __future__ import annotations

from typing import Any

from .masking import mask_text
from .results import EnqueueResult


class StreamdelayError(Exception):
    """Root of every error raised by streamdelay.

    Carries optional context so logs and the CLI can say which job, topic or script was involved.
    The message goes through ``masking.mask_text``: no URL password or ``password=``-like value
    survives in ``str(exc)`` (see docs/security.md).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        job_id: str | None = None,
        topic: str | None = None,
        script: str | None = None,
    ) -> None:
        super().__init__(mask_text(message))
        self.field = field
        self.job_id = job_id
        self.topic = topic
        self.script = script


class ValidationError(StreamdelayError, ValueError):
    """A caller passed a value that is not allowed; ``field`` names the argument."""


class BodyEncodeError(ValidationError):
    """A job body cannot be encoded by the queue's codec, or is larger than the size limit."""


class BodyDecodeError(StreamdelayError):
    """A delivered body does not decode, or does not match the handler's ``body=`` type."""


class ConfigError(StreamdelayError):
    """The queue, worker or Redis setup is not usable (bad URL, old Redis, group clash ...)."""


class LayoutError(ConfigError):
    """A queue's record layout is one this process cannot read, or a layout change was refused
    because a live process could not read the new one (docs/keys.md#layouts)."""


class ConnectionFailed(StreamdelayError):
    """Redis could not be reached (after the retry policy gave up)."""


class ScriptError(StreamdelayError):
    """A Lua script answered with an error streamdelay does not know."""


class PartialEnqueueError(StreamdelayError):
    """An enqueue of several script calls of which some were written and others failed.

    ``outcomes`` has one entry per job, in the order given: its ``EnqueueResult`` when its call
    was written, else the error of its call (that call wrote nothing). ``written`` and
    ``failed`` sort them out. Enqueueing the failed jobs again is safe (see docs/producer.md).
    """

    def __init__(self, outcomes: list[EnqueueResult | Exception]) -> None:
        failed = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, Exception)]
        first = failed[0][1] if failed else None
        super().__init__(f"enqueue: {len(outcomes) - len(failed)} of {len(outcomes)} jobs "
                         f"written, {len(failed)} not: {first}", script="enqueueJobs")
        self.outcomes = outcomes

    @property
    def written(self) -> list[EnqueueResult]:
        """The results of the jobs that were written, in the order given."""
        return [o for o in self.outcomes if not isinstance(o, Exception)]

    @property
    def failed(self) -> list[tuple[int, Exception]]:
        """(index in the jobs given, error) of each job that was not written."""
        return [(i, o) for i, o in enumerate(self.outcomes) if isinstance(o, Exception)]

    def __reduce__(self) -> tuple[type[PartialEnqueueError], tuple[list[EnqueueResult |
                                                                        Exception]]]:
        return (type(self), (self.outcomes,))


class NotDurable(StreamdelayError):
    """A call that changes jobs was written on the primary, but fewer replicas than the queue's
    ``replicas=`` (or no local fsync, with ``local_fsync=True``) confirmed it within
    ``replica_timeout``: the write may exist, and a failover now could lose it.

    Retrying the same call is safe: every call that creates or changes a job is idempotent by
    id (an enqueue of an id that exists answers ``created=False``). ``job_ids`` names the jobs
    of an enqueue (including generated ids: enqueue them again with ``id=``); ``acked`` is how
    many replicas confirmed, ``replicas`` how many were asked for (docs/guarantees.md#durability).
    """

    def __init__(self, message: str, *, acked: int = 0, replicas: int = 0,
                 job_ids: tuple[str, ...] = (), script: str | None = None,
                 job_id: str | None = None) -> None:
        super().__init__(message, script=script, job_id=job_id)
        self.acked = acked
        self.replicas = replicas
        self.job_ids = job_ids

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_not_durable, (str(self), self.acked, self.replicas, self.job_ids,
                                       self.script, self.job_id))


def _rebuild_not_durable(message: str, acked: int, replicas: int, job_ids: tuple[str, ...],
                         script: str | None, job_id: str | None) -> NotDurable:
    return NotDurable(message, acked=acked, replicas=replicas, job_ids=job_ids, script=script,
                      job_id=job_id)


class JobNotFound(StreamdelayError):
    """A command named a job id that does not exist: the CLI's ``get``, ``cancel``,
    ``reschedule`` and ``dead`` commands raise it (exit 1). The Python API answers such a
    lookup without an exception: ``get`` returns None, ``cancel``/``reschedule`` return False.
    """


class NoSuchQueue(StreamdelayError):
    """A read or operator command named a queue no producer or worker has used on this Redis."""


class GroupNotFound(StreamdelayError):
    """An operation named a consumer group that does not exist on the topic."""


class WorkerNotFound(StreamdelayError):
    """``quiet_worker`` or ``stop_worker`` named no live worker process (gone, never was, or a
    pull/HTTP consumer); ``field`` is ``name`` (docs/operations.md#quiet-and-stop)."""


class StaleReceipt(StreamdelayError):
    """A reservation's ``ack``, ``fail`` or ``touch`` came too late: its delivery was reclaimed
    after its ttr (and redelivered), cancelled, replaced or already settled. Nothing was
    changed; the HTTP service answers 409 (docs/pull.md)."""


class ResultTimeout(StreamdelayError):
    """``Queue.result(id, timeout=)`` ran out of time before the job ended (docs/results.md)."""


class Aborted(StreamdelayError):
    """The job was aborted (``Queue.cancel(id, abort=True)``) while it ran: ``job.check_abort()``
    raises it in a handler, a reservation's ``touch`` when its job was aborted (the HTTP
    service answers 409 ``aborted``). The job is already gone, cancelled: nothing to settle
    (docs/worker.md#abort)."""
