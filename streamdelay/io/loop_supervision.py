"""Keeping background loops alive: backoff after a failed Redis call, restart after a crash.

Shared by the worker's loops (read, ack, heartbeat, reclaim) and the dispatcher's per-partition
loops, so every long-running loop of the library follows one policy.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("streamdelay.worker")


def failure_pause(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row: exponential, 2 s cap, jitter."""
    return min(2.0, 0.05 * 2.0 ** min(failures, 6)) * random.uniform(0.5, 1.0)


async def pause_after_failure(
    failures: int, what: str, exc: BaseException, logger: logging.Logger = log
) -> None:
    """Sleep with exponential backoff and jitter after a failed Redis call, and log it."""
    pause = failure_pause(failures)
    logger.warning("redis unavailable during %s (%s); retrying in %.2fs", what, exc, pause)
    await asyncio.sleep(pause)


CANCEL_ROUNDS = 5
CANCEL_WAIT = 1.0


async def cancel_all(tasks: list[asyncio.Task[Any]], logger: logging.Logger = log) -> None:
    """Cancel ``tasks`` and wait for them; cancel again any that swallowed the cancel.

    A cancel that lands while redis-py connects can come out as a ``TimeoutError`` (Python
    3.11's ``asyncio.timeout`` racing the cancel), which the loops treat as a connection
    failure and retry: one ``cancel()`` is then lost and a plain ``gather`` waits for ever (a
    worker sent SIGTERM 30 ms after it started never exited). Bounded: after
    ``CANCEL_ROUNDS`` rounds a task still running is logged and left behind.
    """
    pending = {task for task in tasks if not task.done()}
    for _ in range(CANCEL_ROUNDS):
        if not pending:
            break
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=CANCEL_WAIT)
    for task in pending:
        logger.warning("a background task did not stop when cancelled: %r", task)
    for task in tasks:  # retrieve outcomes, so none is reported as never retrieved
        if task.done() and not task.cancelled():
            task.exception()


async def supervised(
    what: str, loop: Callable[[], Awaitable[None]], logger: logging.Logger = log
) -> None:
    """Run a background loop; an unexpected error is logged and the loop restarted after a pause.

    A loop that died silently would leave a live process that no longer reads, heartbeats,
    reclaims or promotes: the worst kind of outage. Returns when ``loop`` returns (stopping).
    """
    failures = 0
    while True:
        try:
            await loop()
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failures += 1
            pause = failure_pause(failures)
            logger.exception("%s loop failed (%s); restarting it in %.2fs", what, exc, pause)
            await asyncio.sleep(pause)


def supervised_task(what: str, loop: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
    """A background loop as a task that logs and restarts on unexpected errors
    (``supervised``)."""
    return asyncio.create_task(supervised(what, loop))


class OwnedTasks:
    """Short background tasks a worker starts while it runs (hand-backs of entries of a paused
    or limited topic): each is kept until it ends, and ``wait`` awaits those still running at
    shutdown, so none outlives the worker's connection pool."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def __bool__(self) -> bool:
        """True while some task runs."""
        return bool(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in a task owned here (kept until it ends)."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the tasks still running."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)


def threads_finish(executor: ThreadPoolExecutor, timeout: float) -> bool:
    """Shut the handler thread pool down; False when a thread is still busy after ``timeout``."""
    executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + timeout
    threads = list(getattr(executor, "_threads", ()))
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)
