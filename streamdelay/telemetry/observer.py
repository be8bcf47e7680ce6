"""One observer every consumer driver reports to (docs/design.md#observer): a delivery started,
a delivery settled with its outcome. What follows from each report is written here once:

- the dashboard's record (``lateness.LatenessRecorder``): lateness per topic, by priority for a
  staged topic's job, and throughput (the outcome fields), flushed every ``FLUSH_EVERY`` s;
- the Prometheus metrics a driver has (``Reporter``: the Worker's, the HTTP service's);
- a debug line per start and settle (logger ``streamdelay.consumer``).

A driver only says what happened: the Worker when a handler starts and when its delivery is
settled, ``q.reserve`` when it hands a job out and when a reservation is acked or failed, the
HTTP consumer through ``q.reserve`` (it is ``q.reserve`` + a transport). So a job taken by any
driver shows in the dashboard's lateness and throughput, and a new rule (lateness by priority
was one) is written here, not once per driver.

Lateness is the start (a handler start, a hand-out) minus the due time, on the Redis server
clock: the local clock plus ``clock_offset_ms``, which the driver measures once (``TIME``, the
fastest of a few samples: ``clock.py``).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from ..io.runner import call_with_retry, run_with_retry_sync
from ..protocol.scripts import ScriptCall
from .lateness import FLUSH_EVERY, FLUSH_GIVE_UP, LatenessRecorder

log = logging.getLogger("streamdelay.consumer")

# What each outcome a driver reports counts as in the dashboard's throughput (the record's
# fields, docs/dashboard.md#lateness): an expired job is dead; a dropped one (``sd.Drop``) is
# acknowledged but not a success; snoozed, released and reclaimed ones come back later.
THROUGHPUT = {"handled": "ok", "retried": "retried", "dead": "dead", "expired": "dead"}


class Reporter(Protocol):
    """A driver's metrics, told by the observer (``streamdelay_lateness_seconds``,
    ``streamdelay_jobs_total`` ...)."""

    def started(self, topic: str, group: str, late_ms: float, priority: str | None) -> None:
        """A delivery started ``late_ms`` after its due time (server clock)."""

    def settled(self, topic: str, group: str, outcome: str, count: int) -> None:
        """``count`` deliveries were settled as ``outcome``."""


class ConsumerObserver:
    """The reports of one driver (a Worker, a queue object's ``reserve``) on one queue."""

    def __init__(self, queue: str, flusher: str, clock_offset_ms: float | None = None,
                 log_lines: bool = True) -> None:
        self.queue = queue
        self.log_lines = log_lines  # False: the driver logs its runs itself (the Worker)
        self.record = LatenessRecorder(queue, flusher)  # the dashboard's
        self.reporters: list[Reporter] = []
        # server ms - local ms; None: not measured yet (the driver measures it before its
        # first start: ``needs_clock``)
        self.clock_offset_ms = clock_offset_ms
        self._flush_at = time.monotonic() + FLUSH_EVERY

    @property
    def needs_clock(self) -> bool:
        """Whether the driver must measure the server clock before it reports a start."""
        return self.clock_offset_ms is None

    def late_ms(self, due_ms: int) -> float:
        """How late a delivery starting now is, ms on the server clock (0 when early)."""
        return max(0.0, time.time() * 1000 + (self.clock_offset_ms or 0.0) - due_ms)

    def started(self, topic: str, group: str, due_ms: int, priority: str | None = None,
                job_id: str = "") -> float:
        """A delivery of ``topic`` starts now (a handler start, a job handed out): count its
        lateness (by ``priority`` too, a staged topic's job); returns it in ms."""
        late = self.late_ms(due_ms)
        self.record.observe(topic, late, priority)
        for reporter in self.reporters:
            reporter.started(topic, group, late, priority)
        if self.log_lines and log.isEnabledFor(logging.DEBUG):
            log.debug("job started", extra={"queue": self.queue, "topic": topic,
                                            "job_id": job_id, "lateness_ms": round(late, 3)})
        return late

    def settled(self, topic: str, group: str, outcome: str, count: int = 1,
                job_id: str = "") -> None:
        """``count`` deliveries of ``topic`` settled as ``outcome`` (``handled``, ``retried``,
        ``dead``, ``expired``, ``dropped``, ``snoozed``, ``released`` ...)."""
        name = THROUGHPUT.get(outcome)
        if name is not None:
            for _ in range(count):
                self.record.settled(topic, name)
        for reporter in self.reporters:
            reporter.settled(topic, group, outcome, count)
        if self.log_lines and log.isEnabledFor(logging.DEBUG):
            log.debug("job %s", outcome, extra={"queue": self.queue, "topic": topic,
                                                "job_id": job_id, "outcome": outcome})

    # --- flushing the dashboard's record --------------------------------------------------

    def due_flush(self, now: float | None = None) -> ScriptCall | None:
        """The ``recordLateness`` call of what was counted, once ``FLUSH_EVERY`` passed since
        the last (None: not yet, or nothing counted): for a driver without a loop of its own
        (``q.reserve``), which sends it after a call it made anyway."""
        now = time.monotonic() if now is None else now
        if now < self._flush_at:
            return None
        self._flush_at = now + FLUSH_EVERY
        return self.record.take()

    def flush_sync(self, client: Any, call: ScriptCall | None,
                   give_up_after: float = FLUSH_GIVE_UP) -> None:
        """Send ``call`` (a ``due_flush`` or ``record.take()``) on a blocking client; a failure
        drops those counts with a warning (statistics: see ``LatenessRecorder.flush``)."""
        if call is None:
            return
        try:
            run_with_retry_sync(client, call, give_up_after, "lateness flush")
        except Exception as exc:  # Redis full or away: the dashboard misses these seconds
            self._failed(exc)
        else:
            self.record.failing = False

    async def flush_async(self, client: Any, call: ScriptCall | None,
                          give_up_after: float = FLUSH_GIVE_UP) -> None:
        """``flush_sync`` on an asyncio client."""
        if call is None:
            return
        try:
            await call_with_retry(client, call, give_up_after, "lateness flush")
        except Exception as exc:
            self._failed(exc)
        else:
            self.record.failing = False

    def _failed(self, exc: Exception) -> None:
        # one warning per streak of failures (a full Redis refuses every flush)
        (log.debug if self.record.failing else log.warning)(
            "could not record lateness for the dashboard (%s)", exc)
        self.record.failing = True

    async def run(self, client: Any, every: float = FLUSH_EVERY) -> None:
        """Flush every ``every`` seconds until cancelled, then once more (a driver with a loop
        of its own: the Worker, the HTTP service)."""
        await self.record.run(client, every)
