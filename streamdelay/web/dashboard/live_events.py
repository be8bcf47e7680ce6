"""The queue page's live events panel (docs/dashboard.md#live-events): the newest lifecycle
events of the queue, refreshed like every ``data-live`` element (``static/dashboard.js``) from
``pages.events_fragment``. It reads with ``latest_events_plan`` (one ``XREVRANGE`` per
partition, bounded by ``PANEL_EVENTS``), the same stream ``Queue.events`` follows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...client.queue import AsyncQueue
from ...io.runner import drive_async
from ...protocol.event_entries import latest_events_plan
from . import view_models as views

PANEL_EVENTS = 25  # the newest events the panel shows


@dataclass(frozen=True)
class EventRow:
    """One row of the panel."""

    kind: str
    id: str
    topic: str
    attempt: int
    when: str
    detail: str


async def events_context(q: AsyncQueue) -> dict[str, Any]:
    """What ``_events.html`` shows: whether the queue keeps events, and its newest ones."""
    cfg = q.config
    on, found = await drive_async(q.client, latest_events_plan(cfg.name, cfg.partitions,
                                                               PANEL_EVENTS), cfg.retry_for)
    rows = [EventRow(e.kind, e.id, e.topic, e.attempt, views.moment(e.at), e.detail)
            for e in found]
    return {"events_on": on, "events": rows}
