"""``capture``: record what producer code enqueues, with no server at all
(docs/testing.md#capture).

Inside ``with capture() as captured:`` the enqueue methods of every ``Queue`` and
``AsyncQueue`` (``enqueue``, ``enqueue_many``, ``chain``) validate and encode each job exactly as
they do for Redis (``producer.enqueuing.prepare_values``: a bad topic, id or body raises the
same error) and record it instead of sending it; the reply is the ``EnqueueResult`` a new job
gets. Outside the block the methods are the library's own again (nothing is checked on the
enqueue path when no capture is active).
"""

from __future__ import annotations

import difflib
import pprint
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..base import validation
from ..base.models import EnqueueResult, JobSpec
from ..base.tasks import Task
from ..client.enqueuing import PreparedJob, prepare_values
from ..client.queue import AsyncQueue, Queue
from ..client.typed import AsyncEnqueued, Enqueued

_OPTIONS = ("delay", "at", "id", "ttr", "max_attempts", "backoff", "headers", "replace",
            "max_wait", "keep_result", "priority", "key", "expires")
_ANY: Any = object()  # an argument of assert_enqueued not given: not compared


@dataclass(frozen=True)
class CapturedJob:
    """One job producer code enqueued under ``capture``: its queue, topic (a task's topic
    string), body as given, the options given (only those), and the id it got."""

    queue: str
    topic: str
    body: Any
    id: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def delay(self) -> Any:
        """The ``delay`` given (None: none)."""
        return self.options.get("delay")

    def shown(self) -> str:
        """One line: ``topic body=... delay=...`` (the options given)."""
        extra = "".join(f" {k}={v!r}" for k, v in self.options.items())
        return f"{self.topic} body={_plain(self.body)!r}{extra} (queue {self.queue}, id {self.id})"


def _plain(value: Any) -> Any:
    """A body as a worker in any language sees it: JSON-like builtins (a Struct as a dict)."""
    try:
        return msgspec.to_builtins(value)
    except (TypeError, ValueError):
        return value


def _same_when(name: str, expected: Any, got: Any) -> bool:
    """Delays and times compared as the wire has them (ms): ``30`` equals ``timedelta(30 s)``."""
    if expected is None or got is None:
        return expected is got
    try:
        if name == "at":
            return validation.at_ms(expected) == validation.at_ms(got)
        return validation.delay_ms(expected, name) == validation.delay_ms(got, name)
    except (ValueError, TypeError):
        return bool(expected == got)


class Captured:
    """The jobs enqueued inside one ``capture()`` block, in order, and the asserts on them."""

    def __init__(self) -> None:
        self.jobs: list[CapturedJob] = []

    def __len__(self) -> int:
        """How many jobs were enqueued."""
        return len(self.jobs)

    def __iter__(self) -> Iterator[CapturedJob]:
        """The jobs, in the order they were enqueued."""
        return iter(self.jobs)

    def of(self, topic: str | Task[Any, Any]) -> list[CapturedJob]:
        """The jobs of ``topic`` (a string or a typed task)."""
        name = validation.topic(topic)
        return [job for job in self.jobs if job.topic == name]

    def clear(self) -> None:
        """Forget the jobs recorded so far."""
        self.jobs.clear()

    def assert_nothing_enqueued(self) -> None:
        """Fail when any job was enqueued (listing them)."""
        if self.jobs:
            raise AssertionError("expected no job enqueued; got:\n" +
                                 "\n".join(f"  {job.shown()}" for job in self.jobs))

    def assert_enqueued(self, topic: str | Task[Any, Any], body: Any = _ANY, delay: Any = _ANY,
                        **options: Any) -> CapturedJob:
        """The job of ``topic`` enqueued with ``body`` and ``delay`` (and any other option
        given, e.g. ``id=``, ``at=``, ``key=``); those not given are not compared. Bodies are
        compared as the wire has them (a Struct equals its dict), delays in ms. Fails with the
        jobs of that topic and a diff of the nearest one when there is no such job."""
        unknown = sorted(set(options) - {*_OPTIONS, "after", "on_parent_failure"})
        if unknown:
            raise TypeError(f"assert_enqueued: unknown option {unknown[0]!r}")
        name = validation.topic(topic)
        wanted = dict(options)
        if delay is not _ANY:
            wanted["delay"] = delay
        candidates = self.of(name)
        for job in candidates:
            if not self._misses(job, body, wanted):
                return job
        raise AssertionError(self._report(name, body, wanted, candidates))

    @staticmethod
    def _misses(job: CapturedJob, body: Any, wanted: dict[str, Any]) -> list[str]:
        """What of ``job`` differs from the expected ``body`` and options."""
        missed = []
        if body is not _ANY and not (job.body == body or _plain(job.body) == _plain(body)):
            missed.append("body")
        for name, expected in wanted.items():
            got = job.options.get(name)
            same = (_same_when(name, expected, got) if name in ("delay", "at", "ttr",
                                                                  "max_wait", "keep_result",
                                                                  "expires")
                    else expected == got or (name == "id" and expected == job.id))
            if not same:
                missed.append(name)
        return missed

    def _report(self, name: str, body: Any, wanted: dict[str, Any],
                candidates: Sequence[CapturedJob]) -> str:
        expected = "".join([f" body={_plain(body)!r}" if body is not _ANY else "",
                            *(f" {k}={v!r}" for k, v in wanted.items())])
        lines = [f"no job of topic {name!r} enqueued with{expected or ' any arguments'}"]
        if not candidates:
            others = sorted({job.topic for job in self.jobs})
            lines.append(f"no job of that topic was enqueued (topics enqueued: "
                         f"{', '.join(others) or 'none'})")
            return "\n".join(lines)
        lines.append(f"jobs of {name!r} enqueued ({len(candidates)}):")
        ranked = sorted(candidates, key=lambda job: len(self._misses(job, body, wanted)))
        for job in candidates:
            differs = ", ".join(self._misses(job, body, wanted))
            lines.append(f"  {job.shown()}  <- differs in: {differs}")
        nearest = ranked[0]
        for part in self._misses(nearest, body, wanted):
            want = _plain(body) if part == "body" else wanted[part]
            got = _plain(nearest.body) if part == "body" else nearest.options.get(part)
            lines.append(f"{part} of the nearest ({nearest.id}): expected - / got +")
            lines.extend("  " + line.rstrip("\n") for line in difflib.ndiff(
                pprint.pformat(want, width=80).splitlines(),
                pprint.pformat(got, width=80).splitlines()))
        return "\n".join(lines)


_active: list[Captured] = []  # the capture blocks open now, innermost last
_originals: dict[tuple[type, str], Any] = {}


def _record(queue: Any, topic: Any, body: Any, options: dict[str, Any]) -> EnqueueResult:
    """Validate one job as ``enqueue`` does, record it in the innermost capture, and answer as
    Redis would for a new job (due by this process's clock)."""
    workflow: dict[str, Any] = {k: options.pop(k) for k in ("after", "on_parent_failure")
                                if k in options}
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"enqueue() got an unexpected keyword argument {unknown[0]!r}")
    o = options.get
    job: PreparedJob = prepare_values(
        queue.config, topic, body, o("delay"), o("at"), o("id"), o("ttr"), o("max_attempts"),
        o("backoff"), o("headers"), o("replace", False), o("max_wait"), o("keep_result"),
        o("priority"), o("key"), o("expires"))
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    _active[-1].jobs.append(CapturedJob(queue.config.name, str(job.args[1]), body, job.id,
                                        {**given, **workflow}))
    now_ms = int(time.time() * 1000)
    due = job.when_ms if job.when_kind == "a" else now_ms + job.when_ms
    return EnqueueResult(job.id, due, True, "waiting" if workflow.get("after") else "delayed")


def _specs(queue: Any, specs: Iterable[JobSpec]) -> list[EnqueueResult]:
    return [_record(queue, spec.topic, spec.body,
                    {name: getattr(spec, name) for name in _OPTIONS}) for spec in specs]


def _enqueue(self: Queue, topic: Any, body: Any = None, **options: Any) -> Any:
    done = _record(self, topic, body, options)
    return Enqueued(done, self, topic) if isinstance(topic, Task) else done


async def _aenqueue(self: AsyncQueue, topic: Any, body: Any = None, **options: Any) -> Any:
    done = _record(self, topic, body, options)
    return AsyncEnqueued(done, self, topic) if isinstance(topic, Task) else done


def _many(self: Queue, specs: Iterable[JobSpec], **_: Any) -> list[EnqueueResult]:
    return _specs(self, specs)


async def _amany(self: AsyncQueue, specs: Iterable[JobSpec], **_: Any) -> list[EnqueueResult]:
    return _specs(self, specs)


_PATCHES: dict[tuple[type, str], Any] = {
    (Queue, "enqueue"): _enqueue, (Queue, "enqueue_many"): _many, (Queue, "chain"): _many,
    (AsyncQueue, "enqueue"): _aenqueue, (AsyncQueue, "enqueue_many"): _amany,
    (AsyncQueue, "chain"): _amany,
}


@contextmanager
def capture() -> Iterator[Captured]:
    """Record, instead of sending, every job enqueued inside the block (``Queue`` and
    ``AsyncQueue``: ``enqueue``, ``enqueue_many``, ``chain``), with no server::

        with sd.testing.capture() as captured:
            checkout(order_id=42)  # producer code: q.enqueue("order.close", ...)
        captured.assert_enqueued("order.close", body={"order_id": 42}, delay=1800)

    Blocks nest (the innermost records). Not thread-safe across blocks opened in several
    threads at once: the methods are patched for the whole process while a block is open."""
    captured = Captured()
    if not _active:
        for (cls, name), replacement in _PATCHES.items():
            _originals[cls, name] = cls.__dict__.get(name, _ANY)  # _ANY: a mixin's method
            setattr(cls, name, replacement)
    _active.append(captured)
    try:
        yield captured
    finally:
        _active.remove(captured)
        if not _active:
            for (cls, name), original in _originals.items():
                if original is _ANY:
                    delattr(cls, name)
                else:
                    setattr(cls, name, original)
            _originals.clear()
