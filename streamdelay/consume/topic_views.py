"""A worker's view of its topics: which are paused, limited or staged (priorities, fairness keys:
docs/priorities.md), as the pause and limit watches last read them. The watches
(``paused_topics.py``, ``limiting.py``) are the only writers, each through its own method
(``set_paused``, ``set_limited``, ``set_staged``); the read and take loops only read it.
``changed`` wakes idle take loops when the limited or staged topics change (or the worker
stops: ``wake``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .core.routing import Routes


@dataclass
class TopicViews(Routes):
    """The paused, the limited and the staged topics (routed by the core's one rule:
    ``consume/core/routing.py``), and an event set when the limited or the staged ones change."""

    # the queue keeps events: reads take the server clock along, which dates each job's
    # 'started' at its settle (docs/events.md#started); refreshed with the paused topics
    events: bool = False
    # a quiet command's topics (all the worker's): held paused until the process ends
    # (docs/operations.md#quiet-and-stop)
    quiet: frozenset[str] = frozenset()
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def set_events(self, on: bool) -> None:
        """The pause watch's write: whether the queue keeps events now."""
        self.events = on

    def set_paused(self, paused: frozenset[str]) -> bool:
        """The pause watch's write: the topics paused now; True when they changed."""
        paused = paused | self.quiet
        changed = paused != self.paused
        self.paused = paused
        return changed

    def set_quiet(self, topics: frozenset[str]) -> bool:
        """The pause watch's write on a quiet command: every one of ``topics`` counts as paused
        from now on (read loops leave them out, take loops idle, an entry read meanwhile is
        handed back); True the first time."""
        if self.quiet:
            return False
        self.quiet = topics
        self.paused = self.paused | topics
        self.changed.set()
        return True

    def set_limited(self, limited: frozenset[str]) -> bool:
        """The limit watch's write: the topics limited now; when they changed, idle take loops
        are woken and True is returned."""
        if limited == self.limited:
            return False
        self.limited = limited
        self.changed.set()
        return True

    def set_staged(self, staged: frozenset[str]) -> bool:
        """The limit watch's write of the staged topics; when they changed, idle take loops
        are woken and True is returned."""
        if staged == self.staged:
            return False
        self.staged = staged
        self.changed.set()
        return True

    def wake(self) -> None:
        """Wake idle take loops (the worker stops: they see it at once)."""
        self.changed.set()

    def renew(self) -> None:
        """A fresh wake-up event for a new ``serve`` (an event belongs to the loop that first
        waited on it)."""
        self.changed = asyncio.Event()
