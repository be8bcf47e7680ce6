"""The consumer core's router: how every driver takes a topic's jobs and what it does with an
entry it should not run (docs/design.md#the-consumer-core).

One rule for plain, limited, staged (priorities, fairness keys: docs/priorities.md) and paused
topics, whatever the driver: a paused topic is not taken at all; a staged one only through
``takeStaged`` (its limit, when it has one, checked there too); a limited one only through
``takeLimited``; any other by the plain read (``XREADGROUP``). An entry the plain read returns
for a topic that is no longer plain (paused, limited or staged since: the read raced the
change) goes back to its stream, not an attempt; an entry a take returns goes back only when
its topic was paused meanwhile. The Worker applies it to its ``TopicViews`` (the pause and
limit watches keep them), a reserve round to what its look found (``reserving.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

Route = Literal["paused", "staged", "limited", "plain"]
PAUSED: Route = "paused"
STAGED: Route = "staged"
LIMITED: Route = "limited"
PLAIN: Route = "plain"
TAKES: frozenset[Route] = frozenset((STAGED, LIMITED))  # routes whose jobs come by a take

E = TypeVar("E")


def route(paused: bool, limited: bool, staged: bool) -> Route:
    """THE routing rule: paused first (nothing is taken), then staged (``takeStaged`` checks a
    staged topic's limit itself), then limited, else plain."""
    if paused:
        return PAUSED
    if staged:
        return STAGED
    return LIMITED if limited else PLAIN


def runs(found: Route, taken: bool) -> bool:
    """Whether an entry of a topic routed ``found`` now is run: one a take returned unless the
    topic is paused, one the plain read returned only while the topic is plain; any other is
    handed back to its stream (not an attempt)."""
    return found != PAUSED if taken else found == PLAIN


@dataclass
class Routes:
    """What a consumer knows of its topics now: the paused, the limited and the staged ones
    (the Worker's ``TopicViews`` extend it)."""

    paused: frozenset[str] = frozenset()
    limited: frozenset[str] = frozenset()
    staged: frozenset[str] = frozenset()  # taken only through takeStaged (docs/priorities.md)

    def of(self, topic: str) -> Route:
        """How ``topic``'s jobs are taken now (``route``)."""
        return route(topic in self.paused, topic in self.limited, topic in self.staged)

    def taken(self, topic: str) -> bool:
        """Whether ``topic``'s jobs start only through a take (limited or staged)."""
        return self.of(topic) in TAKES

    def plain(self, topics: Iterable[str]) -> list[str]:
        """The topics the plain read reads now (neither paused nor limited nor staged)."""
        return [t for t in topics if self.of(t) == PLAIN]

    def runs(self, topic: str, taken: bool = False) -> bool:
        """Whether an entry of ``topic`` a take (``taken``) or the plain read returned is run
        now (``runs``)."""
        return runs(self.of(topic), taken)

    def learn(self, topic: str, paused: bool, limited: bool, staged: bool | None = None
              ) -> Route:
        """One topic's look (a reserve round's) written in: whether it is paused, limited and
        (``staged`` None: not looked at, the last answer stands) staged; its route now."""
        self.paused = _with(self.paused, topic, paused)
        self.limited = _with(self.limited, topic, limited)
        if staged is not None:
            self.staged = _with(self.staged, topic, staged)
        return self.of(topic)

    def split(self, entries: Sequence[E], topic_of: Callable[[E], str], taken: bool = False
              ) -> tuple[list[E], list[E]]:
        """``entries`` a read (or a take) returned: those to run and those to hand back."""
        kept: list[E] = []
        back: list[E] = []
        for entry in entries:
            (kept if self.runs(topic_of(entry), taken) else back).append(entry)
        return kept, back


def _with(topics: frozenset[str], topic: str, member: bool) -> frozenset[str]:
    """``topics`` with ``topic`` in or out (the same set when nothing changes)."""
    if (topic in topics) == member:
        return topics
    return topics | {topic} if member else topics - {topic}
