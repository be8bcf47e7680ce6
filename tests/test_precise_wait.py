"""The dispatcher's wait (consumer/timer.py): never shorter than asked, not rounded up to whole
milliseconds, ended at once by a wake-up, and a wait cut short leaves nothing behind that would
end the next one early. Both ways: the Linux timerfd and the thread fallback."""

from __future__ import annotations

import asyncio
import sys

import pytest

from streamdelay.consumer.timer import PreciseWait

pytestmark = pytest.mark.timeout(60)
WAYS = [pytest.param(True, id="timerfd"), pytest.param(False, id="thread")]


@pytest.mark.parametrize("use_timerfd", WAYS)
def test_waits_are_never_short_and_not_rounded_to_whole_ms(use_timerfd: bool) -> None:
    """asyncio alone sleeps whole ms (epoll), rounded up: 0.1 ms would take 1 ms or more."""
    async def waits() -> list[float]:
        loop = asyncio.get_running_loop()
        timer = PreciseWait(use_timerfd=use_timerfd)
        over = []
        try:
            for gap in (0.0001, 0.0011, 0.0021) * 4:
                began = loop.time()
                await timer.wait(asyncio.Event(), gap)
                over.append(loop.time() - began - gap)
        finally:
            timer.close()
        return over

    over = asyncio.run(waits())
    assert all(extra >= 0 for extra in over), over  # never shorter than asked
    assert min(over) < 0.0005, over  # and not rounded up to the next ms each time


@pytest.mark.parametrize("use_timerfd", WAYS)
def test_a_wake_up_ends_the_wait_and_the_next_wait_lasts_its_gap(use_timerfd: bool) -> None:
    async def scenario() -> tuple[float, float, bool]:
        loop = asyncio.get_running_loop()
        timer = PreciseWait(use_timerfd=use_timerfd)
        try:
            wake = asyncio.Event()
            loop.call_later(0.01, wake.set)
            began = loop.time()
            await timer.wait(wake, 5.0)
            woken_after = loop.time() - began
            # a short wait whose expiry is not yet read when the next wait starts ...
            wake.clear()
            await timer.wait(wake, 0.0001)
            expired = wake.is_set()
            wake.clear()
            await asyncio.sleep(0.005)
            # ... and a wait armed right after: it must last its whole gap
            began = loop.time()
            await timer.wait(wake, 0.05)
            return woken_after, loop.time() - began, expired
        finally:
            timer.close()

    woken_after, next_wait, expired = asyncio.run(scenario())
    assert woken_after < 1.0  # a wake-up ends the wait at once
    assert next_wait >= 0.05
    assert expired or not use_timerfd  # on the timerfd, the expiry is the wake-up


def test_the_dispatcher_waits_on_a_timerfd_on_linux() -> None:
    async def kernel_timer() -> bool:
        timer = PreciseWait()
        try:
            return timer.kernel_timer
        finally:
            timer.close()

    assert asyncio.run(kernel_timer()) is sys.platform.startswith("linux")


def test_a_set_event_returns_at_once_and_a_closed_timer_releases_its_fd() -> None:
    async def scenario() -> int:
        timer = PreciseWait()
        wake = asyncio.Event()
        wake.set()
        await timer.wait(wake, 60.0)  # already set: no wait at all
        timer.close()
        timer.close()  # twice is harmless
        return timer._fd

    assert asyncio.run(scenario()) == -1
