"""What one ``streamdelay serve`` process runs besides answering requests: an ``AsyncQueue``
per served queue, and (unless ``--no-dispatch``) a dispatcher and the reclaim upkeep for each,
so a fleet of HTTP consumers needs nothing else (docs/http.md#serve).

The reclaim pass re-queues deliveries idle past their job's ttr for every (topic, group) the
queue records: the one reclaim plan (``consume/core/upkeep_plans.py``) of ``streamdelay claim``,
the worker
and a reserve caller: an HTTP consumer that stops calling ``:touch`` loses its jobs to the next
consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from functools import partial
from typing import Any

from ..base.errors import StreamdelayError
from ..client.queue import AsyncQueue
from ..consume.core.cadence import RECLAIM, process_cadence, site_of
from ..consume.core.upkeep_plans import reclaim_plan
from ..dispatch.dispatcher import Dispatcher
from ..io.loop_supervision import supervised
from ..io.runner import drive_async
from ..telemetry.observer import Reporter
from .serve_settings import ServeSettings

log = logging.getLogger("streamdelay.web")
STOP_GRACE = 3.0


class Service:
    """The served queues and their background duties, for the app's lifespan."""

    def __init__(self, settings: ServeSettings) -> None:
        self.settings = settings
        self.queues: dict[str, AsyncQueue] = {
            name: AsyncQueue(name, url=settings.url, **settings.queue_settings())
            for name in settings.queues}
        self.dispatchers: dict[str, Dispatcher] = {}
        # the jobs handed out on :reserve and settled by receipt are reported by each queue's
        # consumer observer (telemetry/observer.py), as a worker's are; its record is flushed
        # by the service's loop (and after a reserve or settle once due)
        self._flushers: list[asyncio.Task[Any]] = []
        self.draining = asyncio.Event()  # set on SIGTERM: long polls answer at once
        self._tasks: list[asyncio.Task[Any]] = []
        self._reclaim: asyncio.Task[Any] | None = None
        # called with (queue, topic, group, count) after each reclaim that moved jobs
        self.on_reclaimed: Callable[[str, str, str, int], None] | None = None
        # called with (queue, topic, '', count) for jobs expired at promotion (docs/expiry.md;
        # those expired at :reserve are reported by the queue's consumer observer)
        self.on_expired: Callable[[str, str, str, int], None] | None = None

    def _expired(self, queue: str, topic: str, group: str, count: int) -> None:
        if self.on_expired is not None:
            self.on_expired(queue, topic, group, count)

    def _promote_expired(self, queue: str, topic: str, count: int) -> None:
        self._expired(queue, topic, "", count)

    def promoted(self) -> dict[str, int]:
        """Jobs promoted so far by each embedded dispatcher."""
        return {name: d.promoted for name, d in self.dispatchers.items()}

    def report_to(self, reporter_for: Callable[[str], Reporter]) -> None:
        """Add the metrics of each served queue (``reporter_for(name)``) to what its consumer
        observer tells (``telemetry/observer.py``)."""
        for name, queue in self.queues.items():
            queue.observer.reporters.append(reporter_for(name))

    async def start(self) -> None:
        """Start the lateness flushes, then the dispatchers and the reclaim loop (not with
        ``dispatch=False``)."""
        self._flushers = [asyncio.create_task(queue.observer.run(queue.client))
                          for queue in self.queues.values()]
        if not self.settings.dispatch:
            return
        for name, queue in self.queues.items():
            dispatcher = self.dispatchers[name] = Dispatcher(queue.config)
            dispatcher.on_expired = partial(self._promote_expired, name)
            self._tasks.append(asyncio.create_task(self._supervised(
                dispatcher.run, f"dispatcher of {name}")))
        self._reclaim = asyncio.create_task(self._supervised(self._reclaim_loop, "reclaim"))

    async def _supervised(self, run: Any, what: str) -> None:
        """Run a duty under the one supervision policy of every loop of the library
        (``io/loop_supervision.py``: logged and restarted after a pause)."""
        await supervised(what, run, log)

    async def reclaim_once(self) -> int:
        """One reclaim pass over every served queue."""
        moved = 0
        for name, queue in self.queues.items():
            cfg = queue.config  # every (topic, group) the queue records
            found = await drive_async(queue.client, reclaim_plan(cfg.name, cfg.partitions),
                                      None, "reclaim")
            for topic, group in sorted(found.seen):
                count = found.count((topic, group))
                moved += count
                if count and self.on_reclaimed is not None:
                    self.on_reclaimed(name, topic, group, count)
        return moved

    async def _reclaim_loop(self) -> None:
        """Reclaim every served queue every ``reclaim_interval`` (jittered), holding each
        queue's reclaim in the process's cadence meanwhile (``consume/core/cadence.py``): the
        ``:reserve`` rounds of its HTTP consumers then leave the reclaim to this loop, so the
        process reclaims once however many consumers it serves."""
        interval = self.settings.reclaim_interval
        cadence = process_cadence()
        with contextlib.ExitStack() as held:
            for queue in self.queues.values():
                held.enter_context(cadence.holding(RECLAIM, site_of(queue.config.url,
                                                                    queue.config.name)))
            while True:
                try:
                    moved = await self.reclaim_once()
                except StreamdelayError as exc:
                    log.warning("reclaim pass failed: %s", exc)
                    moved = 0
                if moved:
                    log.info("re-queued %d job(s) of silent consumers", moved)
                await asyncio.sleep(interval * random.uniform(0.8, 1.2))

    async def stop(self) -> None:
        """Stop the duties and close every connection pool."""
        self.draining.set()
        for flusher in self._flushers:  # each flushes what it counted once more
            flusher.cancel()
        await asyncio.gather(*self._flushers, return_exceptions=True)
        if self._reclaim is not None:
            self._reclaim.cancel()
            await asyncio.gather(self._reclaim, return_exceptions=True)
        for dispatcher in self.dispatchers.values():
            dispatcher.stop()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=STOP_GRACE)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        for dispatcher in self.dispatchers.values():
            with contextlib.suppress(Exception):
                await dispatcher.close()
        for queue in self.queues.values():
            with contextlib.suppress(Exception):
                await queue.close()
