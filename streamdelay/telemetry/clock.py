"""The Redis server clock as seen from a worker: the offset of its ``TIME`` to the local clock.

Lateness (handler start - due) is measured on the server clock, the clock due times come from;
the offset is taken from the sample with the shortest round trip (error: half that trip).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..io.steps import run_step_async
from ..protocol.plan import Command

TIME = Command(("TIME",))

log = logging.getLogger("streamdelay.worker")

CLOCK_SAMPLES = 5


def offset_of(sent: float, received: float, time_reply: Any) -> tuple[float, float]:
    """``(server ms - local ms, error bound ms)`` of one ``TIME`` reply taken between the local
    times ``sent`` and ``received`` (epoch seconds)."""
    seconds, micros = time_reply
    server_ms = int(seconds) * 1000 + int(micros) / 1000
    return server_ms - (sent + received) * 500, (received - sent) * 500


async def server_clock_offset(client: Any, samples: int = CLOCK_SAMPLES) -> float:
    """Server ms - local ms, from the best of ``samples`` ``TIME`` calls on ``client``; 0 (the
    local clock, logged) when Redis does not answer them."""
    best: tuple[float, float] | None = None
    try:
        for _ in range(samples):
            sent = time.time()
            reply = await run_step_async(client, TIME)
            if isinstance(reply, dict):  # a cluster client: one node's answer
                reply = next(iter(reply.values()))
            sample = offset_of(sent, time.time(), reply)
            if best is None or sample[1] < best[1]:
                best = sample
    except Exception as exc:  # lateness on the local clock beats no worker
        log.warning("could not read the Redis clock (%s); lateness is measured on the local "
                    "clock", exc)
    return 0.0 if best is None else best[0]
