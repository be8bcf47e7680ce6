"""The lifecycle event type: what ``Queue.events`` yields (docs/events.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

EventKind = Literal["enqueued", "promoted", "started", "succeeded", "retried", "dead",
                    "cancelled", "expired"]
# every kind a script may write, in lifecycle order; ``expired``: a job whose deadline passed
# before it started (docs/expiry.md)
EVENT_KINDS: tuple[EventKind, ...] = ("enqueued", "promoted", "started", "succeeded", "retried",
                                      "dead", "cancelled", "expired")


@dataclass(frozen=True)
class JobEvent:
    """One lifecycle event of a job, written by the script that made the transition.

    ``at`` is epoch ms on the server clock (for ``started``: when the consumer read the job);
    ``attempt`` the attempt the event is about (0 before the first one); ``detail`` a short text
    per kind (docs/events.md#kinds). ``cursor`` resumes a read right after this event: pass it as
    ``since`` (or as the SSE ``Last-Event-ID``).
    """

    kind: str
    id: str
    topic: str
    attempt: int
    at: int
    detail: str
    cursor: str
    partition: int = 0
