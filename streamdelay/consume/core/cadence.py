"""The upkeep cadence: ONE scheduler per process that says when a consumer duty (reclaim,
prune, fleet renewal) of a (queue, group, topic) or a consumer is next due, whoever asks
(docs/design.md#the-consumer-core).

Every consumer face asks it: a reserve round before its take (``reserving.py``), the Worker's
reclaim loop after each pass (``consume/upkeep_loops.py``: the Worker always runs its own pass, its
``Witness`` needs the contact, and marks the pairs it covered), and ``streamdelay serve``,
which *holds* a queue's reclaim while its reclaim loop runs: that loop re-queues every
(topic, group) the queue records, so the rounds of its HTTP consumers leave the reclaim to it
and the process reclaims once, however many consumers it serves. I/O-free: the callers run
the plans (``upkeep_plans.py``), this only keeps the times (monotonic seconds). Threads of a sync
``Queue.reserve`` share it without a lock: two asking at once can at worst both run one pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

RECLAIM, PRUNE, FLEET = "reclaim", "prune", "fleet"
REMEMBERED = 4096  # times kept per process (the ones past go first when full)

Key = tuple[str, str, tuple[str, ...]]  # duty, site (url and queue), scope


def site_of(url: str, queue: str) -> str:
    """The place a queue's duties are scheduled for: its server and its name (two tests, or
    two apps, may use one queue name on different servers)."""
    return f"{url}\x00{queue}"


class Cadence:
    """When each duty is next due; the duties a process-wide loop holds for a whole site."""

    def __init__(self) -> None:
        self._next: dict[Key, float] = {}
        self._held: Counter[tuple[str, str]] = Counter()
        self.taken: Counter[str] = Counter()  # duties handed out so far, by name (tests, docs)

    def due(self, duty: str, site: str, scope: tuple[str, ...], now: float, every: float,
            first: float = 0.0) -> bool:
        """Whether ``duty`` of ``scope`` at ``site`` is due at ``now``; when it is, the caller
        runs it and the next is due ``every`` later. ``first``: seconds before the first one
        (a prune waits a while). Never due while a loop holds the duty for the whole site."""
        if self._held[(duty, site)] > 0:
            return False
        key = (duty, site, scope)
        at = self._next.get(key)
        if at is None and first > 0:
            self._remember(key, now + first, now)
            return False
        if at is not None and now < at:
            return False
        self._remember(key, now + every, now)
        self.taken[duty] += 1
        return True

    def ran(self, duty: str, site: str, scope: tuple[str, ...], now: float, every: float
            ) -> None:
        """A caller that runs ``duty`` on its own schedule (the Worker's reclaim) ran it for
        ``scope``: nobody else in the process runs it before ``every`` has passed."""
        self._remember((duty, site, scope), now + every, now)
        self.taken[duty] += 1

    @contextmanager
    def holding(self, duty: str, site: str) -> Iterator[None]:
        """While inside, ``duty`` of every scope at ``site`` is the holder's (``serve``'s
        reclaim loop): ``due`` answers False for it."""
        self._held[(duty, site)] += 1
        try:
            yield
        finally:
            self._held[(duty, site)] -= 1
            if self._held[(duty, site)] <= 0:
                del self._held[(duty, site)]

    def held(self, duty: str, site: str) -> bool:
        """Whether a loop holds ``duty`` for the whole ``site`` now."""
        return self._held[(duty, site)] > 0

    def due_now(self, site: str) -> None:
        """Every duty of ``site`` due at the next ask (a test that ages its deliveries)."""
        for key in self._next:
            if key[1] == site:
                self._next[key] = 0.0

    def _remember(self, key: Key, at: float, now: float) -> None:
        if key not in self._next and len(self._next) >= REMEMBERED:
            self._next = {k: t for k, t in self._next.items() if t > now}
            if len(self._next) >= REMEMBERED:  # all still ahead: forget the earliest half
                kept = sorted(self._next.items(), key=lambda item: item[1])[REMEMBERED // 2:]
                self._next = dict(kept)
        self._next[key] = at


_PROCESS = Cadence()


def process_cadence() -> Cadence:
    """The process's one cadence (every face of every queue object asks this one)."""
    return _PROCESS
