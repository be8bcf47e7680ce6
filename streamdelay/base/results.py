"""What an enqueue answers, on its own: ``models.py`` (the data types) and ``errors.py`` (whose
``PartialEnqueueError`` carries results) both build on it, so neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

EnqueueState = Literal["delayed", "ready", "dead", "done", "corrupt", "waiting"]


@dataclass(frozen=True, init=False)
class EnqueueResult:
    """What ``enqueue`` did: ``created`` is False when the id already existed."""

    id: str
    due: int
    created: bool
    state: EnqueueState

    def __init__(self, id: str, due: int, created: bool, state: EnqueueState) -> None:
        """The generated ``__init__``'s arguments, set in one go (one result per job of
        ``enqueue_many``; see ``JobSpec.__init__``)."""
        self.__dict__.update(id=id, due=due, created=created, state=state)
