"""What the worker tells about each job run: debug lines, warnings with the job's fields, spans.

``JobObserver.started`` returns None (and does nothing else) unless debug logging is on for
``streamdelay.worker`` or an OpenTelemetry tracer provider was set when the worker started, so a
worker that observes nothing pays one level check per job (docs/operations.md#logs).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..base.models import Drop, Job, Retry
from .clock import server_clock_offset
from .tracing import MESSAGING_SYSTEM, end_consumer_span, start_consumer_span, tracing_enabled

log = logging.getLogger("streamdelay.worker")

# the log fields of a job, in the order the text format prints them (docs/operations.md#logs)
JOB_FIELDS = ("queue", "topic", "job_id", "attempt", "lateness_ms", "duration_ms")


class JobRun:
    """One handler run being observed: its log fields, start time and span (if traced)."""

    __slots__ = ("fields", "span", "started", "token")

    def __init__(self, fields: dict[str, Any], span: Any, token: Any) -> None:
        self.fields = fields
        self.span = span
        self.token = token
        self.started = time.monotonic()

    def ended(self, error: BaseException | None) -> None:
        """The handler returned or raised ``error``: note the duration, end the span."""
        self.fields["duration_ms"] = round((time.monotonic() - self.started) * 1000, 3)
        if self.span is None:
            return
        span, self.span = self.span, None
        if error is None or isinstance(error, Drop):
            end_consumer_span(span, self.token, None, "handled")
        elif isinstance(error, Retry):  # asked for, not a failure: no error status
            end_consumer_span(span, self.token, None, "retry")
        else:
            end_consumer_span(span, self.token, error, "failed")


class JobObserver:
    """Observes the handler runs of one worker: queue and group names, the Redis clock offset,
    and whether runs are traced (decided when the worker starts: ``observe``)."""

    def __init__(self, queue: str, group: str, clock_offset_ms: float = 0.0,
                 traced: bool = False) -> None:
        self.queue = queue
        self.group = group
        self.clock_offset_ms = clock_offset_ms
        self.traced = traced

    def started(self, job: Job) -> JobRun | None:
        """Observe the start of ``job``'s handler; None when nothing observes jobs.

        Lateness is the handler start minus the due time, both on the Redis server clock
        (local clock + the offset measured when the worker started).
        """
        debug = log.isEnabledFor(logging.DEBUG)
        if not debug and not self.traced:
            return None
        lateness_ms = round(time.time() * 1000 + self.clock_offset_ms - job.due, 3)
        fields: dict[str, Any] = {"queue": self.queue, "topic": job.topic, "job_id": job.id,
                                  "attempt": job.attempt, "lateness_ms": lateness_ms}
        if debug:
            log.debug("job started", extra=fields)
        if not self.traced:
            return JobRun(fields, None, None)
        span, token = start_consumer_span(job.headers, job.topic,
                                          self.span_attributes(job, lateness_ms))
        return JobRun(fields, span, token)

    def span_attributes(self, job: Job, lateness_ms: float) -> dict[str, Any]:
        """The attributes of a run's span: messaging conventions, then streamdelay's own."""
        return {
            "messaging.system": MESSAGING_SYSTEM,
            "messaging.operation": "process",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": job.topic,
            "messaging.destination.partition.id": str(job.partition),
            "messaging.consumer.group.name": self.group,
            "messaging.message.id": job.id,
            "streamdelay.queue": self.queue,
            "streamdelay.job.attempt": job.attempt,
            "streamdelay.job.max_attempts": job.max_attempts,
            "streamdelay.job.lateness_ms": lateness_ms,
            "streamdelay.job.due": job.due,
        }


async def observe(queue: str, group: str, client: Any) -> JobObserver:
    """The observer of a starting worker: measures the Redis clock offset on ``client`` and
    looks once whether an OpenTelemetry tracer provider is set."""
    return JobObserver(queue, group, await server_clock_offset(client), tracing_enabled())


def delivery_fields(queue: str, topic: str, job_id: str, run: JobRun | None) -> dict[str, Any]:
    """The log fields of a job: the run's when it was observed, else queue, topic and id."""
    if run is not None:
        return run.fields
    return {"queue": queue, "topic": topic, "job_id": job_id}


def log_settled(run: JobRun | None, outcome: str, reason: str = "") -> None:
    """The debug line of a settled run (``handled``, ``retried``; dead ones are warnings)."""
    if run is not None and log.isEnabledFor(logging.DEBUG):
        extra = {**run.fields, "outcome": outcome}
        if reason:
            extra["error"] = reason.splitlines()[0]
        log.debug("job %s", outcome, extra=extra)
