"""Telemetry of streamdelay: trace context in job headers and consumer spans (OpenTelemetry,
optional), per-job log fields, and the log formats of the long-running commands.

Importing this package imports neither ``opentelemetry`` nor installs any log handler
(docs/operations.md#logs, docs/operations.md#tracing).
"""

from __future__ import annotations

from .job_logs import JOB_FIELDS, JobObserver, JobRun, delivery_fields, log_settled, observe
from .logs import LOG_FORMATS, JsonFormatter, TextFormatter, service_logging
from .tracing import tracing_enabled, with_trace_context

__all__ = [
    "JOB_FIELDS",
    "LOG_FORMATS",
    "JobObserver",
    "JobRun",
    "JsonFormatter",
    "TextFormatter",
    "delivery_fields",
    "log_settled",
    "observe",
    "service_logging",
    "tracing_enabled",
    "with_trace_context",
]
