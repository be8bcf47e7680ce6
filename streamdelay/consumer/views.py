"""A worker's view of its topics: which are paused, limited or staged, as the pause and limit
watches last read them (``pausing.py``, ``limiting.py``: the only writers). The read and take
loops read it; ``changed`` wakes idle take loops when the limits change (or the worker stops).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class TopicViews:
    """The paused, the limited and the staged topics, and an event set when the limited or the
    staged ones change."""

    paused: frozenset[str] = frozenset()
    limited: frozenset[str] = frozenset()
    staged: frozenset[str] = frozenset()  # docs/priorities.md: taken only through takeStaged
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def plain(self, topics: list[str]) -> list[str]:
        """The topics the plain read loop reads now: neither paused nor limited nor staged."""
        return [t for t in topics
                if t not in self.paused and t not in self.limited and t not in self.staged]

    def taken(self, topic: str) -> bool:
        """Whether ``topic``'s jobs start only through a take (limited or staged)."""
        return topic in self.limited or topic in self.staged
