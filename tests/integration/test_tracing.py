"""OpenTelemetry: trace context in job headers at enqueue (every face), a consumer span per
handler run in the worker, child of the producer's span, read back from the SDK's in-memory
exporter. Workers run in-process against a real redis-server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

import streamdelay as sd

ROOT = Path(__file__).resolve().parents[2]
SERVE_LIMIT = 30.0


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """A global SDK tracer provider exporting to memory, for this test only."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    yield exporter
    provider.shutdown()
    # the API sets its provider once per process: undo it so later tests run untraced
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


def run_worker(queue: sd.Queue, handlers: dict[str, Any]) -> None:
    """Serve ``handlers`` (topic -> function) until nothing is left to do."""
    worker = sd.Worker(queue, block=0.1, reclaim_interval=0.2)
    for topic, fn in handlers.items():
        worker.handler(topic)(fn)
    asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), SERVE_LIMIT))


def consumer_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    """The finished consumer spans, in the order they ended."""
    return [s for s in exporter.get_finished_spans() if s.kind is SpanKind.CONSUMER]


def trace_id_of(headers: dict[str, str]) -> int:
    """The trace id of a ``traceparent`` header (version-traceid-spanid-flags)."""
    return int(headers["traceparent"].split("-")[1], 16)


def test_the_handler_runs_in_a_consumer_span_child_of_the_producer_span(
    spans: InMemorySpanExporter, queue: sd.Queue
) -> None:
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("http request") as request:
        job_id = queue.enqueue("orders.close", {"n": 1}, headers={"tenant": "a"}).id
    producer = request.get_span_context()
    info = queue.get(job_id)
    assert info is not None and info.headers["tenant"] == "a"
    assert trace_id_of(info.headers) == producer.trace_id
    inside: list[Any] = []
    run_worker(queue, {"orders.close": lambda job: inside.append(
        trace.get_current_span().get_span_context())})  # a def handler: run in a thread
    (span,) = consumer_spans(spans)
    assert span.name == "process orders.close"
    assert span.parent is not None and span.parent.span_id == producer.span_id
    assert span.context.trace_id == producer.trace_id
    assert [link.context.span_id for link in span.links] == [producer.span_id]
    assert inside == [span.context]  # the handler's own spans become children of it
    attributes = dict(span.attributes or {})
    assert attributes["messaging.system"] == "streamdelay"
    assert attributes["messaging.operation"] == "process"
    assert attributes["messaging.operation.type"] == "process"
    assert attributes["messaging.destination.name"] == "orders.close"
    assert attributes["messaging.message.id"] == job_id
    assert attributes["messaging.consumer.group.name"] == "workers"
    assert attributes["streamdelay.queue"] == queue.config.name
    assert attributes["streamdelay.job.attempt"] == 1
    assert -1000 < float(attributes["streamdelay.job.lateness_ms"]) < 20_000  # type: ignore[arg-type]
    assert attributes["streamdelay.outcome"] == "handled"
    assert span.status.status_code is StatusCode.UNSET


def test_a_retried_job_has_one_span_per_attempt_each_a_child_of_the_producer(
    spans: InMemorySpanExporter, queue: sd.Queue
) -> None:
    with trace.get_tracer("test").start_as_current_span("request") as request:
        job_id = queue.enqueue("flaky", {}, max_attempts=3, backoff=[0.05]).id
    producer = request.get_span_context()

    async def flaky(job: sd.Job) -> None:  # an async handler: runs in the worker's loop
        if job.attempt == 1:
            raise RuntimeError("first attempt fails")

    run_worker(queue, {"flaky": flaky})
    first, second = consumer_spans(spans)
    assert [s.attributes["streamdelay.job.attempt"] for s in (first, second)] == [1, 2]  # type: ignore[index]
    for span in (first, second):
        assert span.attributes["messaging.message.id"] == job_id  # type: ignore[index]
        assert span.parent is not None and span.parent.span_id == producer.span_id
        assert [link.context.span_id for link in span.links] == [producer.span_id]
    assert first.context.span_id != second.context.span_id
    assert first.status.status_code is StatusCode.ERROR
    assert "RuntimeError: first attempt fails" in (first.status.description or "")
    (event,) = first.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "RuntimeError"  # type: ignore[index]
    assert first.attributes["streamdelay.outcome"] == "failed"  # type: ignore[index]
    assert second.status.status_code is StatusCode.UNSET and not second.events


def test_a_job_enqueued_without_a_context_gets_a_root_span(
    spans: InMemorySpanExporter, queue: sd.Queue
) -> None:
    job_id = queue.enqueue("lonely", {}).id
    info = queue.get(job_id)
    assert info is not None and info.headers == {}
    run_worker(queue, {"lonely": lambda job: None})
    (span,) = consumer_spans(spans)
    assert span.parent is None and not span.links
    assert span.attributes["messaging.message.id"] == job_id  # type: ignore[index]


def test_every_enqueue_face_carries_the_context_and_keeps_the_callers_headers(
    spans: InMemorySpanExporter, queue: sd.Queue, redis_url: str
) -> None:
    explicit = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    tracer = trace.get_tracer("test")

    async def async_faces() -> list[str]:
        async with sd.AsyncQueue(queue.config.name, url=redis_url) as aq:
            one = await aq.enqueue("t", {"face": "async"})
            many = await aq.enqueue_many([sd.JobSpec("t", {"face": "async many"}),
                                          sd.JobSpec("t", {}, headers={"traceparent": explicit})])
            return [one.id, *(r.id for r in many)]

    with tracer.start_as_current_span("request") as request:
        ids = [queue.enqueue("t", {"face": "sync"}).id]
        ids += [r.id for r in queue.enqueue_many([sd.JobSpec("t", {"n": n}) for n in range(3)])]
        ids += asyncio.run(async_faces())
    trace_id = request.get_span_context().trace_id
    infos = [queue.get(job_id) for job_id in ids]
    headers = [info.headers for info in infos if info is not None]
    assert len(headers) == 7
    assert [trace_id_of(h) for h in headers[:6]] == [trace_id] * 6
    assert headers[6] == {"traceparent": explicit}  # the caller's choice stands


def test_bad_headers_inside_a_span_are_the_usual_validation_error(
    spans: InMemorySpanExporter, queue: sd.Queue
) -> None:
    with trace.get_tracer("test").start_as_current_span("request"):
        for bad in (["not", "a", "mapping"], {"k": 1}, {f"h{n}": "v" for n in range(33)}):
            with pytest.raises(sd.ValidationError) as caught:
                queue.enqueue("t", {}, headers=bad)  # type: ignore[arg-type]
            assert caught.value.field == "headers"
        full = {f"h{n}": "v" for n in range(32)}  # the limit: no room for traceparent
        job_id = queue.enqueue("t", {}, headers=full).id
    info = queue.get(job_id)
    assert info is not None and info.headers == full  # the caller's headers go as they are


def test_a_worker_without_a_tracer_provider_makes_no_span(queue: sd.Queue) -> None:
    with trace.get_tracer("test").start_as_current_span("no provider: not recording"):
        job_id = queue.enqueue("quiet", {}).id
    info = queue.get(job_id)
    assert info is not None and "traceparent" not in info.headers  # nothing valid to carry
    handled: list[str] = []
    run_worker(queue, {"quiet": lambda job: handled.append(job.id)})
    assert handled == [job_id]
    assert not sd.telemetry.tracing_enabled()


NOT_INSTALLED = """
import asyncio, json, sys
sys.modules["opentelemetry"] = None  # as if the package were not installed
import streamdelay as sd
from streamdelay.telemetry import tracing
queue = sd.Queue(sys.argv[2], url=sys.argv[1])
job_id = queue.enqueue("t", {}, headers={"tenant": "a"}).id
worker = sd.Worker(queue, block=0.1)
ran = []
worker.handler("t")(lambda job: ran.append(job.headers))
asyncio.run(worker.serve(until_idle=True))
print(json.dumps({"ran": ran, "missing": tracing._missing,
                  "imported": [name for name, module in sys.modules.items()
                              if name.startswith("opentelemetry") and module is not None]}))
"""


def test_without_opentelemetry_jobs_run_and_nothing_is_imported(
    redis_url: str, queue_name: str
) -> None:
    result = subprocess.run([sys.executable, "-c", NOT_INSTALLED, redis_url, queue_name],
                            capture_output=True, text=True, cwd=ROOT, timeout=60, check=True)
    report = json.loads(result.stdout)
    assert report == {"ran": [{"tenant": "a"}], "missing": True, "imported": []}
