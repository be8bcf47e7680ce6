"""A worker's view of its topics: which are paused and which are limited, as the pause and limit
watches last read them (``pausing.py``, ``limiting.py``: the only writers). The read and take
loops read it; ``changed`` wakes idle take loops when the limits change (or the worker stops).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class TopicViews:
    """The paused and the limited topics, and an event set when the limited ones change."""

    paused: frozenset[str] = frozenset()
    limited: frozenset[str] = frozenset()
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def plain(self, topics: list[str]) -> list[str]:
        """The topics the plain read loop reads now: neither paused nor limited."""
        return [t for t in topics if t not in self.paused and t not in self.limited]
