"""Handler time limits that share timers: one ``call_at`` per 10 ms of deadlines, not per job
(the process executor's hard limit is its pool's watchdog, consume/processes/pool.py).

``asyncio.timeout`` schedules and cancels one timer per call, about half of what a worker spends
on the task of a no-op job (docs/benchmarks.md#what-bounds-the-figures). Here the deadlines of
one event loop are grouped by the 10 ms tick they fall in (rounded up: a limit never fires
early, at most one tick late), and one timer per tick cancels the handlers still running then.
The cancelled handler sees ``TimeoutError`` as with ``asyncio.timeout``; a cancel from anyone
else (shutdown) stays a ``CancelledError``.
"""

from __future__ import annotations

import asyncio
import math
import sys
import weakref
from collections.abc import Awaitable
from typing import Any

GRAIN = 0.01  # seconds per tick


class _Limit:
    """The time limit of one running handler (its task)."""

    __slots__ = ("expired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.expired = False

    def expire(self) -> None:
        """Cancel the handler, unless it is done (its deadline has passed)."""
        if not self.task.done():
            self.expired = True
            self.task.cancel()


class _Ticks:
    """The limits of one event loop, by the tick their deadline falls in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ticks: dict[int, set[_Limit]] = {}  # ticks with running limits
        self.timed: set[int] = set()  # ticks with a timer (kept while empty: one timer a tick)

    def add(self, limit: _Limit, timeout: float) -> int:
        """Register ``limit`` to expire ``timeout`` s from now; its tick."""
        tick = math.ceil((self.loop.time() + timeout) / GRAIN)
        if tick not in self.timed:
            self.timed.add(tick)
            self.loop.call_at(tick * GRAIN, self._fire, tick)
        limits = self.ticks.get(tick)
        if limits is None:
            limits = self.ticks[tick] = set()
        limits.add(limit)
        return tick

    def remove(self, limit: _Limit, tick: int) -> None:
        """Forget ``limit`` (its handler returned)."""
        limits = self.ticks.get(tick)
        if limits is not None:
            limits.discard(limit)
            if not limits:  # its timer, kept, finds nothing when it fires
                del self.ticks[tick]

    def _fire(self, tick: int) -> None:
        self.timed.discard(tick)
        for limit in self.ticks.pop(tick, ()):
            limit.expire()


def _uncancel(task: asyncio.Task[Any]) -> int:
    """``task.uncancel()`` (Python 3.11+, the only versions that call ``run_limited``)."""
    if sys.version_info >= (3, 11):
        return task.uncancel()
    return 0


_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Ticks] = (
    weakref.WeakKeyDictionary())


async def run_limited(awaitable: Awaitable[Any], timeout: float) -> Any:
    """Await ``awaitable`` in the current task; ``TimeoutError`` once ``timeout`` s have passed
    (then it is cancelled), as ``asyncio.timeout(timeout)`` would."""
    loop = asyncio.get_running_loop()
    ticks = _loops.get(loop)
    if ticks is None:
        ticks = _loops[loop] = _Ticks(loop)
    task = asyncio.current_task()
    if task is None:  # not in a task: nothing to cancel with
        return await asyncio.wait_for(awaitable, timeout)
    limit = _Limit(task)
    tick = ticks.add(limit, timeout)
    try:
        value = await awaitable
    except asyncio.CancelledError:
        if limit.expired and _uncancel(task) == 0:  # our cancel, and no other one pending
            raise TimeoutError(f"handler ran longer than {timeout:g}s") from None
        raise
    else:
        if limit.expired:  # the handler swallowed our cancel: take it back (asyncio.timeout too)
            _uncancel(task)
        return value
    finally:
        ticks.remove(limit, tick)
