"""Handler time limits with shared timers (``consume/time_limits.py``): a handler past its limit
gets ``TimeoutError``, never before the limit; a cancel from elsewhere stays a cancel; a handler
that returns in time leaves nothing behind."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from streamdelay.consume import time_limits
from streamdelay.consume.time_limits import run_limited

pytestmark = pytest.mark.timeout(60)


def test_a_handler_past_its_limit_gets_a_timeout_never_early() -> None:
    async def main() -> float:
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            await run_limited(asyncio.sleep(5), 0.05)
        return time.monotonic() - began

    assert 0.05 <= asyncio.run(main()) < 2.0


def test_a_cancel_from_elsewhere_stays_a_cancel() -> None:
    async def main() -> None:
        task = asyncio.create_task(run_limited(asyncio.sleep(5), 3))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_handlers_that_return_in_time_leave_no_limit_behind() -> None:
    async def quick(i: int) -> int:
        await asyncio.sleep(0)
        return i

    async def main() -> int:
        async def one(i: int) -> None:
            await run_limited(quick(i), 30)
        await asyncio.gather(*(one(i) for i in range(500)))
        ticks = time_limits._loops[asyncio.get_running_loop()]
        return sum(len(limits) for limits in ticks.ticks.values())

    assert asyncio.run(main()) == 0


def test_many_limits_in_one_tick_each_time_out() -> None:
    async def main() -> list[bool]:
        async def one() -> bool:
            try:
                await run_limited(asyncio.sleep(5), 0.05)
            except TimeoutError:
                return True
            return False
        return await asyncio.gather(*(one() for _ in range(50)))

    assert all(asyncio.run(main()))


def test_a_handler_that_swallows_the_cancel_leaves_its_task_uncancelled() -> None:
    async def stubborn() -> None:
        with contextlib.suppress(asyncio.CancelledError):  # swallowed: it returns normally
            await asyncio.sleep(5)

    async def main() -> int:
        await run_limited(stubborn(), 0.02)
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0.01)  # no cancel left pending for the next await either
        return task.cancelling()

    assert asyncio.run(main()) == 0
