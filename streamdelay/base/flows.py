"""Workflow value types: what ``Queue.batch`` and ``Queue.batch_info`` answer
(docs/workflows.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BatchState = Literal["open", "running", "done"]


@dataclass(frozen=True)
class BatchInfo:
    """A batch's progress. ``state``: ``open`` (members may still be added), ``running``
    (closed, members pending), ``done`` (closed and every member ended: its callbacks were
    enqueued). ``dead`` counts members that ended without success (dead or cancelled)."""

    id: str
    total: int
    succeeded: int
    dead: int
    pending: int
    state: BatchState
    created: int  # epoch ms, server clock
    on_success: str | None = None  # the callback's job id, when the batch has one
    on_complete: str | None = None
