"""A wait to the microsecond on the running event loop, cut short by an ``asyncio.Event``, and
the server clock read through the local monotonic clock (``ServerClock``).

asyncio's own timers wake up to a millisecond late: the epoll selector waits whole milliseconds,
rounded up. On Linux the dispatcher waits on a ``timerfd`` instead (armed with the absolute
deadline on ``CLOCK_MONOTONIC``, the clock of ``time.monotonic`` and ``loop.time``), registered
with the loop like a socket: the kernel's high-resolution timer wakes the loop itself, at no
thread hop. Elsewhere (no timerfd, or a loop without ``add_reader``) the wait ends as before: the
epoll timer until the last millisecond, which is slept in a thread (``time.sleep`` has µs
resolution). Either way a wait never ends before its deadline unless the event is set.
See docs/benchmarks.md#what-bounds-the-figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

EPOLL_RESOLUTION = 0.001  # the granularity of asyncio's own timers (epoll: whole ms)
# How fast the error bound of a clock offset grows with its age: 100 µs per second (clock rates
# differ by far less; NTP slews at most 500 ppm, and a sample a second old is rarely the best).
DRIFT = 1e-4
_CLOCK_MONOTONIC = 1
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> Any:
    """The C library when it offers timerfd (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.timerfd_create.restype = ctypes.c_int
        libc.timerfd_settime.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


class PreciseWait:
    """Waits of one loop (one at a time): ``await timer.wait(wake, gap)``; ``close()`` after."""

    def __init__(self, *, use_timerfd: bool = True) -> None:
        self._loop = asyncio.get_running_loop()
        self._fd = -1
        self._woken: asyncio.Event | None = None
        self._threads: ThreadPoolExecutor | None = None
        if use_timerfd and _LIBC is not None:
            fd = _LIBC.timerfd_create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
            if fd >= 0:
                try:
                    self._loop.add_reader(fd, self._expired)
                    self._fd = fd
                except NotImplementedError:  # e.g. a proactor loop: no readers
                    os.close(fd)

    @property
    def kernel_timer(self) -> bool:
        """True when waits end on a timerfd (no thread)."""
        return self._fd >= 0

    async def wait(self, wake: asyncio.Event, gap: float) -> None:
        """Wait ``gap`` seconds to the µs, or less when ``wake`` is set (then at once).

        On the timerfd the expiry sets ``wake`` itself: the caller clears it before its next
        round, as for any wake-up.
        """
        if gap <= 0 or wake.is_set():
            return
        if self._fd < 0:
            await self._wait_in_thread(wake, gap)
            return
        self._woken = wake
        try:
            self._arm(time.monotonic() + gap)
        except OSError:  # e.g. a sandbox refusing timerfd_settime: the thread way from now on
            self._woken = None
            self.close()
            await self._wait_in_thread(wake, gap)
            return
        try:
            await wake.wait()
        finally:
            self._woken = None
            if self._fd >= 0:
                self._arm(0.0)  # disarmed: an earlier wake-up leaves no expiry behind

    def _arm(self, deadline: float) -> None:
        """Arm the timerfd for ``deadline`` (monotonic seconds, rounded up to the ns); 0
        disarms it. Re-arming also forgets an expiry not read yet."""
        seconds = int(deadline)
        nanos = math.ceil((deadline - seconds) * 1e9)
        if nanos >= 1_000_000_000:
            seconds, nanos = seconds + 1, nanos - 1_000_000_000
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(seconds, nanos))
        if _LIBC.timerfd_settime(self._fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0:
            raise OSError(ctypes.get_errno(), "timerfd_settime failed")

    def _expired(self) -> None:
        """The timerfd is readable: read its count and end the wait in progress."""
        try:
            os.read(self._fd, 8)
        except BlockingIOError:  # re-armed or disarmed since the loop saw it ready
            return
        if self._woken is not None:
            self._woken.set()

    async def _wait_in_thread(self, wake: asyncio.Event, gap: float) -> None:
        """Without a timerfd: asyncio's timer until the last ms, that ms slept in a thread."""
        deadline = self._loop.time() + gap
        if gap > EPOLL_RESOLUTION:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=gap - EPOLL_RESOLUTION)
            if wake.is_set():
                return
        rest = deadline - self._loop.time()
        if rest > 0 and not wake.is_set():
            if self._threads is None:
                self._threads = ThreadPoolExecutor(1, thread_name_prefix="streamdelay-timer")
            await self._loop.run_in_executor(self._threads, time.sleep, rest)

    def close(self) -> None:
        """Release the timerfd (or the thread)."""
        if self._fd >= 0:
            with contextlib.suppress(Exception):  # the loop may be closing already
                self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        if self._threads is not None:
            self._threads.shutdown(wait=False)
            self._threads = None


class ServerClock:
    """The server clock (epoch µs) as ``local monotonic µs + offset``.

    Each script call that reads ``TIME`` is a sample: the server read its clock somewhere between
    send and reply, so the offset of the midpoint is off by half the round trip at most. The
    sample with the smallest bound wins (its bound grows by ``DRIFT`` per second of age), so one
    slow call (a stalled process, a busy server) does not move the estimate the way half its own
    round trip would. A sample that contradicts the estimate beyond both bounds (the server clock
    was stepped, another server answers after a failover) replaces it at once.
    """

    def __init__(self) -> None:
        self.offset_us = 0.0
        self.error_us = math.inf  # no sample yet
        self._at = 0.0  # local monotonic seconds of the sample in use

    @property
    def known(self) -> bool:
        """True once a sample was taken."""
        return math.isfinite(self.error_us)

    def observe(self, server_us: int, sent: float, received: float) -> None:
        """Take the sample of a call sent and answered at these local monotonic times (s)."""
        mid = (sent + received) / 2
        error = max(received - sent, 0.0) * 1e6 / 2
        aged = self.error_us + max(mid - self._at, 0.0) * 1e6 * DRIFT
        if self.known and abs(mid * 1e6 + self.offset_us - server_us) > aged + error:
            aged = math.inf  # the clocks disagree: the old estimate is wrong
        if error <= aged:
            self.offset_us, self.error_us, self._at = server_us - mid * 1e6, error, mid

    def local_time(self, server_ms: int) -> float:
        """The local monotonic time (s) at which the server clock reads ``server_ms``."""
        return (server_ms * 1000 - self.offset_us) / 1e6
