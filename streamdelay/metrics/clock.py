"""The Redis server clock seen from this process: the offset of ``TIME`` to the local clock.

Lateness is handler start minus due time, and due times are server-clock epoch ms, so the
worker's metrics add this offset to the local clock. It is measured as the benchmarks and the
demo do (the sample with the smallest round trip wins) when metrics start (after the worker
registered, so Redis answers) and then every ``REFRESH`` seconds, in a thread of its own, off
the worker's event loop. While no measurement succeeded, no lateness is observed.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from ..protocol.plan import Command
from ..redis_io.clients import sync_client
from ..redis_io.steps import run_step_sync

TIME = Command(("TIME",))

log = logging.getLogger("streamdelay.metrics")
REFRESH = 30.0
SAMPLES = 7


def measure_offset_ms(url: str, socket_timeout: float, samples: int = SAMPLES) -> float:
    """Server clock minus local clock, ms, from the sample with the smallest round trip."""
    client = sync_client(url, socket_timeout)
    best, best_trip = 0.0, math.inf
    try:
        for _ in range(samples):
            before = time.time()
            reply = run_step_sync(client, TIME)
            if isinstance(reply, dict):  # a cluster client answers per node
                reply = next(iter(reply.values()))
            seconds, micros = reply
            after = time.time()
            if after - before < best_trip:
                best_trip = after - before
                best = seconds * 1000 + micros / 1000 - (before + after) * 500
    finally:
        client.close()
    return best


class ServerClock:
    """Keeps ``offset_ms`` (None until a measurement succeeded) fresh in a daemon thread."""

    def __init__(self, url: str, socket_timeout: float) -> None:
        self.url, self.socket_timeout = url, socket_timeout
        self.offset_ms: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def measure(self) -> None:
        """Measure once; a failure keeps the last offset and is logged."""
        try:
            self.offset_ms = measure_offset_ms(self.url, self.socket_timeout)
        except Exception as exc:  # Redis away: lateness waits for the next measurement
            log.warning("could not read the Redis clock for the lateness metric (%s)", exc)

    def start(self) -> None:
        """Measure now (a few round trips: the worker calls this once Redis answered it),
        then every ``REFRESH`` seconds in a thread until ``stop()``."""
        self._stop.clear()
        self.measure()
        self._thread = threading.Thread(target=self._loop, name="streamdelay-clock",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(REFRESH):
            self.measure()

    def stop(self) -> None:
        """End the refresh thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.socket_timeout + 1.0)
            self._thread = None

    def now_ms(self) -> float | None:
        """The server clock now, epoch ms (None before the first measurement)."""
        offset = self.offset_ms
        return None if offset is None else time.time() * 1000 + offset
