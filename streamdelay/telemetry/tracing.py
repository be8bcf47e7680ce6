"""OpenTelemetry: the trace context travels in job headers, each handler run is a consumer span.

Optional (``pip install 'streamdelay[otel]'``): nothing here imports ``opentelemetry`` until the
first enqueue or job asks, and when the package is missing that first try is the only cost.
Injection uses the globally configured propagator (W3C ``traceparent``/``tracestate`` by
default); spans use the global tracer provider, and none is made while the application has not
set one (docs/operations.md#tracing).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ..base import validation
from ..base.errors import ValidationError

TRACER_NAME = "streamdelay"
MESSAGING_SYSTEM = "streamdelay"
# the header that says a job already carries a trace context the caller chose
TRACEPARENT = "traceparent"

_otel: ModuleType | None = None  # ``opentelemetry`` once imported
_missing = False  # True once the import failed: never tried again
_last: tuple[object, dict[str, str]] = (None, {})  # (context, its injected headers)


def _api() -> ModuleType | None:
    """The OpenTelemetry API's modules, imported on first use; None when not installed."""
    global _otel, _missing
    if _otel is None and not _missing:
        try:
            import opentelemetry.context
            import opentelemetry.propagate
            import opentelemetry.trace
        except ImportError:
            _missing = True
            return None
        _otel = opentelemetry
    return _otel


def with_trace_context(headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """``headers`` plus the current trace context (``traceparent``, ``tracestate`` ...).

    Unchanged when OpenTelemetry is not installed, when nothing is active, when the caller set
    ``traceparent`` themselves, or when the added entries would break the header limits; keys
    the caller set are never overwritten. ``headers`` itself is never modified.
    """
    global _last
    otel = _api()
    if otel is None:
        return headers
    current = otel.context.get_current()
    if not current or (headers is not None and (not isinstance(headers, Mapping)
                                                or TRACEPARENT in headers)):
        return headers  # nothing to carry, the caller's own context, or bad input (validated)
    if _last[0] is current:  # enqueue_many: every job of a call shares one context
        carrier = _last[1]
    else:
        carrier = {}
        otel.propagate.inject(carrier, context=current)
        _last = (current, carrier)
    if not carrier:
        return headers
    merged = {**carrier, **headers} if headers else dict(carrier)
    if headers:
        try:
            validation.headers(merged)
        except ValidationError:  # the caller's headers are at the limit: theirs win
            return headers
    return merged


def tracing_enabled() -> bool:
    """True when OpenTelemetry is installed and the application set a tracer provider."""
    otel = _api()
    if otel is None:
        return False
    provider = otel.trace.get_tracer_provider()
    return not isinstance(provider, otel.trace.ProxyTracerProvider | otel.trace.NoOpTracerProvider)


def start_consumer_span(
    headers: Mapping[str, str], topic: str, attributes: dict[str, Any]
) -> tuple[Any, Any]:
    """Start the span of one handler run and make it current: ``(span, token)``.

    Its parent is the context ``headers`` carry (a root span when they carry none), and it is
    also linked to that context, as the messaging conventions ask of a processing span.
    """
    otel = _api()
    assert otel is not None  # callers check tracing_enabled() first
    trace = otel.trace
    parent = otel.propagate.extract(headers)
    producer = trace.get_current_span(parent).get_span_context()
    links = [trace.Link(producer)] if producer.is_valid else None
    tracer = trace.get_tracer(TRACER_NAME)
    span = tracer.start_span(f"process {topic}", context=parent, kind=trace.SpanKind.CONSUMER,
                             attributes=attributes, links=links)
    token = otel.context.attach(trace.set_span_in_context(span, parent))
    return span, token


def end_consumer_span(span: Any, token: Any, error: BaseException | None, outcome: str) -> None:
    """Detach the span, record ``error`` (status ERROR) or set status OK, and end it."""
    otel = _api()
    assert otel is not None
    otel.context.detach(token)
    trace = otel.trace
    span.set_attribute("streamdelay.outcome", outcome)
    if error is not None:
        span.record_exception(error)
        span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end()
