"""The dispatcher's timing (io/precise_wait.py). Its wait: never shorter than asked, not rounded
up to whole milliseconds, ended at once by a wake-up, and a wait cut short leaves nothing behind
that would end the next one early (both ways: the Linux timerfd and the thread fallback). Its
server clock: one slow call does not pull the wake-up early, a stepped server clock is followed
at once."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest

from streamdelay.dispatch.dispatcher import Dispatcher, PromoteResult
from streamdelay.io.config import QueueConfig
from streamdelay.io.precise_wait import PreciseWait, ServerClock

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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timerfd is Linux only")
def test_a_timerfd_the_kernel_refuses_to_arm_falls_back_to_the_thread() -> None:
    async def scenario() -> tuple[float, bool]:
        loop = asyncio.get_running_loop()
        timer = PreciseWait()
        real = timer._fd
        loop.remove_reader(real)
        timer._fd = os.open(os.devnull, os.O_RDONLY)  # not a timerfd: timerfd_settime fails
        try:
            began = loop.time()
            await timer.wait(asyncio.Event(), 0.02)
            return loop.time() - began, timer.kernel_timer
        finally:
            timer.close()
            os.close(real)

    slept, kernel_timer = asyncio.run(scenario())
    assert slept >= 0.02  # the whole gap, by the thread way
    assert not kernel_timer


SERVER_US = 1_795_000_000_000_000  # an epoch µs reading of the server clock


def test_the_offset_comes_from_the_call_with_the_smallest_round_trip() -> None:
    clock = ServerClock()
    assert not clock.known
    clock.observe(SERVER_US, 100.0, 100.0002)  # 200 µs round trip: read at 100.0001 ± 100 µs
    assert clock.known and clock.error_us == pytest.approx(100)
    assert clock.local_time(SERVER_US // 1000 + 5) == pytest.approx(100.0051, abs=1e-6)
    # a call of 10 ms whose server read its clock right after the send: the midpoint would put
    # the offset 5 ms off; the estimate keeps the better sample
    clock.observe(SERVER_US + 1_000, 100.001, 100.011)
    assert clock.local_time(SERVER_US // 1000 + 5) == pytest.approx(100.0051, abs=1e-6)
    # a faster one replaces it
    clock.observe(SERVER_US + 2_000, 100.00205, 100.00215)
    assert clock.error_us == pytest.approx(50)
    assert clock.local_time(SERVER_US // 1000 + 5) == pytest.approx(100.0051, abs=1e-6)


def test_an_old_sample_gives_way_and_a_stepped_server_clock_is_followed_at_once() -> None:
    clock = ServerClock()
    clock.observe(SERVER_US, 100.0, 100.0001)  # ± 50 µs
    # 10 s later its bound has grown by 1 ms: a sample of ± 500 µs is better now
    clock.observe(SERVER_US + 10_000_800, 110.0, 110.001)
    assert clock.error_us == pytest.approx(500)
    assert clock.local_time(SERVER_US // 1000 + 10_001) == pytest.approx(110.0007, abs=1e-6)
    # the server clock jumps 2 s ahead (NTP step, failover to another host): a slower call that
    # contradicts the estimate beyond both bounds wins at once
    clock.observe(SERVER_US + 12_010_000, 110.01, 110.014)
    assert clock.local_time(SERVER_US // 1000 + 12_010) == pytest.approx(110.012, abs=1e-6)


def test_after_a_slow_call_the_dispatcher_sleeps_to_the_due_time_by_its_clock() -> None:
    """Half a slow call's round trip is not taken off the sleep: with that estimate alone, a
    call of 3 s whose server read its clock just before replying woke the dispatcher 1.5 s
    before the next due time, for an empty call."""
    dispatcher = Dispatcher(QueueConfig("q", "redis://127.0.0.1:1"), batch=10, safety_tick=5.0)
    clock = ServerClock()
    now = time.monotonic()
    clock.observe(SERVER_US, now, now)  # a fast call just now
    slow = PromoteResult(0, SERVER_US // 1000 + 2_000, SERVER_US // 1000, SERVER_US, 3.0, -1,
                         now - 3.0)
    assert dispatcher._sleep_for(slow) == pytest.approx(0.5)  # without the clock
    clock.observe(slow.now_us, slow.sent, slow.sent + slow.round_trip)
    assert 1.0 < dispatcher._sleep_for(slow, clock) <= 2.0
    # a full batch or nothing delayed: as without the clock
    full = PromoteResult(10, SERVER_US // 1000 + 2_000, SERVER_US // 1000, SERVER_US)
    assert dispatcher._sleep_for(full, clock) == 0.0
    empty = PromoteResult(0, -1, SERVER_US // 1000, SERVER_US)
    assert dispatcher._sleep_for(empty, clock) == 5.0
