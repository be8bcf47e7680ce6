"""The worker's contact with Redis as its upkeep loops see it
(docs/guarantees.md#never-twice-at-once, docs/reliability.md#outages-and-never-twice-at-once):
the heartbeat loop, the read loops and the reclaim loop report failed calls here; the heartbeat
clears ``retouch`` once it touched every running delivery; the reclaim waits for that and
carries the ``Witness`` (consume/core/upkeep_plans.py).
"""

from __future__ import annotations

import logging
import time

from .core.upkeep_plans import Witness

log = logging.getLogger("streamdelay.worker")
# A reclaimer's calls more than 1.2 reclaim intervals plus this apart had an outage between
# them: the silence before it is not counted (consume/core/upkeep_plans.py Witness)
CONTACT_SLACK_MS = 500


class Liveness:
    """The worker's contact with Redis as its upkeep loops see it
    (docs/guarantees.md#never-twice-at-once): after any failed call (``failed``) every running
    delivery is touched before the next reclaim (``retouch``), and the reclaim's ``witness``
    counts only the silence since its contact came back."""

    def __init__(self, consumer: str, reclaim_interval: float) -> None:
        self.witness = Witness(consumer, int(reclaim_interval * 1200) + CONTACT_SLACK_MS)
        self.retouch = False
        self.epoch = 0  # failures so far: a full touch clears ``retouch`` only if none came since
        self.lost_at: float | None = None  # when the contact was lost (logged once)
        # /readyz (docs/operations.md#probes): set by a failed call, cleared by an answered read
        self.down = False

    def failed(self, why: object = "no answer") -> None:
        """A call to Redis failed (or hangs): touch everything before any reclaim."""
        self.retouch = True
        self.down = True
        self.epoch += 1
        self.witness.lost()
        if self.lost_at is None:
            self.lost_at = time.monotonic()
            log.warning("lost contact with redis (%s); every running job is touched at each "
                        "heartbeat tick until one answers, before any reclaim", why)

    def answered(self) -> None:
        """A read of the worker's answered: it is in contact with Redis (``/readyz``)."""
        self.down = False

    def touched_all(self, epoch: int) -> None:
        """Every running delivery was touched by a heartbeat sent at ``epoch``."""
        if epoch == self.epoch:
            self.retouch = False
            if self.lost_at is not None:
                log.info("contact with redis back after %.1fs: every running job touched",
                         time.monotonic() - self.lost_at)
                self.lost_at = None
