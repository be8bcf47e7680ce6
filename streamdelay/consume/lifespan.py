"""``sd.lifespan(worker)``: Workers (each with its embedded dispatcher) inside the lifespan of an
ASGI app (FastAPI, Starlette, Litestar): started with the app, stopped gracefully with it
(docs/integrations.md#lifespan).

The host owns the process and its signals: the workers serve with ``handle_signals=False``, and
the app's shutdown (uvicorn's SIGTERM handling) is what stops them. A worker serves once: the
lifespan entered again (a test client per test) serves a ``replace()`` copy of it.
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any

from ..base.errors import ConfigError
from . import upkeep_loops as upkeep
from .worker import Worker

log = logging.getLogger("streamdelay.worker")


class Lifespan:
    """An async context manager running ``workers`` while it is entered; also a lifespan
    function (``lifespan(app)`` returns itself), the shape Starlette, FastAPI and Litestar
    take."""

    def __init__(self, *workers: Worker) -> None:
        if not workers or not all(isinstance(w, Worker) for w in workers):
            raise ConfigError("lifespan: pass one or more streamdelay Workers", field="worker")
        self.workers: list[Worker] = list(workers)
        self._tasks: list[asyncio.Task[None]] = []
        self._served = False

    def __call__(self, app: Any = None) -> Lifespan:
        """The lifespan function of ``FastAPI(lifespan=...)`` / ``Litestar(lifespan=[...])``."""
        return self

    async def __aenter__(self) -> None:
        """Start every worker; a worker that fails at once (no handler) fails the start-up.
        Redis being down does not: the workers wait for it, as ``streamdelay worker`` does."""
        if self._tasks:
            raise ConfigError("lifespan: already running", field="worker")
        if self._served:  # a stopped Worker does not serve again: a fresh copy does
            self.workers = [w.replace() for w in self.workers]
        self._served = True
        for worker in self.workers:
            task = asyncio.create_task(worker.serve(), name=f"streamdelay {worker!r}")
            task.add_done_callback(_report_end)
            self._tasks.append(task)
        await asyncio.sleep(0)  # each serve() runs to its first wait: its own checks first
        failed = next((t.exception() for t in self._tasks if t.done()), None)
        if failed is not None:
            await self._stop()
            raise failed

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        """Stop every worker gracefully: running handlers get the worker's
        ``shutdown_grace``, finished jobs are acknowledged, connections closed."""
        await self._stop()

    async def _stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        tasks, self._tasks = self._tasks, []
        await asyncio.gather(*tasks, return_exceptions=True)
        for worker in self.workers:
            # a def handler's thread that outlived the grace: its job comes back soon, not
            # after its ttr (what Worker.run does once its loop has ended)
            if worker.running_jobs:
                await upkeep.release_later(worker, list(worker.running_jobs.values()))


def _report_end(task: asyncio.Task[None]) -> None:
    """Log a worker that ended on an error while the app runs on (it serves no jobs now)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("a worker of the app's lifespan stopped: %r", task.exception())


def lifespan(*workers: Worker) -> Lifespan:
    """Run ``workers`` (and their dispatchers) inside an ASGI app's lifespan:
    ``FastAPI(lifespan=sd.lifespan(worker))``, ``Litestar(..., lifespan=[sd.lifespan(worker)])``
    or ``async with sd.lifespan(worker): ...`` (docs/integrations.md#lifespan)."""
    return Lifespan(*workers)
