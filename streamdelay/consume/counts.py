"""What a worker has done since it started: ``Worker.counts``, read by callers as a plain dict
(``worker.counts["handled"]``). The loops that settle, hand back and reclaim add to it through
``add`` only; nothing sets or resets a count.
"""

from __future__ import annotations

KINDS = ("handled", "retried", "dead", "expired", "released", "reclaimed")


class Counts(dict[str, int]):
    """Deliveries handled, retried, dead, expired and released, and jobs reclaimed, by this
    worker."""

    def __init__(self) -> None:
        super().__init__(dict.fromkeys(KINDS, 0))

    def add(self, kind: str, count: int = 1) -> None:
        """Count ``count`` more of ``kind`` (one of ``KINDS``)."""
        self[kind] += count
