"""A queue as the protocol sees it: its name and partitions, the codec, and the defaults its
jobs get (ttr, attempts, backoff, ...). The plans take a ``QueueSpec`` and nothing about
connections; ``io.config.QueueConfig`` is one, with the connection settings (URL, pool
sizes, timeouts, retries) beside it (docs/design.md).
"""

from __future__ import annotations

from typing import Protocol

from ..base import validation
from ..base.errors import ValidationError
from ..base.models import Backoff, BackoffPolicy
from .codec import Serializer


class QueueSpec(Protocol):
    """What the plans read of a queue: the protocol spec and the job defaults."""

    @property
    def name(self) -> str:
        """The queue's name (every key carries it)."""

    @property
    def partitions(self) -> int:
        """How many partitions the queue's keys are split into (docs/scale-out.md)."""

    @property
    def serializer(self) -> Serializer:
        """How bodies are encoded: ``json`` or ``msgpack``."""

    @property
    def ttr(self) -> float:
        """The default time-to-run of a job, seconds."""

    @property
    def max_attempts(self) -> int:
        """The default number of attempts of a job."""

    @property
    def backoff(self) -> BackoffPolicy:
        """The default retry delays of a job."""

    @property
    def handler_timeout(self) -> float | None:
        """The default handler time limit of a worker, seconds (None: none)."""

    @property
    def keep_done(self) -> float:
        """Seconds a finished job's tombstone is kept (0: none)."""

    @property
    def keep_result(self) -> float:
        """Default seconds a job's result is kept (0: none; docs/results.md)."""

    @property
    def max_result_bytes(self) -> int:
        """The largest encoded result kept."""

    @property
    def max_body_bytes(self) -> int:
        """The largest body accepted (and opened by a consumer)."""

    @property
    def past_tolerance(self) -> float:
        """How far in the past an absolute due time may be, seconds."""


def check_spec(spec: QueueSpec) -> None:
    """Refuse a spec with a wrong field, naming it."""
    validation.queue_name(spec.name)
    validation.positive_int(spec.partitions, "partitions", 1024)
    if spec.serializer not in ("json", "msgpack"):
        raise ValidationError("serializer: must be 'json' or 'msgpack'", field="serializer")
    validation.ttr_ms(spec.ttr)
    validation.max_attempts(spec.max_attempts)
    if not isinstance(spec.backoff, Backoff):
        validation.backoff_schedule(spec.backoff)
    if spec.handler_timeout is not None:
        validation.seconds(spec.handler_timeout, "handler_timeout", minimum=0.001)
    validation.seconds(spec.keep_done, "keep_done")
    validation.seconds(spec.keep_result, "keep_result")
    validation.positive_int(spec.max_result_bytes, "max_result_bytes", 512 << 20)
    validation.positive_int(spec.max_body_bytes, "max_body_bytes", 512 << 20)
    validation.seconds(spec.past_tolerance, "past_tolerance")
