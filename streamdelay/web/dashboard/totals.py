"""The queue page's totals and its throughput chart over a chosen window (docs/dashboard.md#totals):
processed and failed today and in total, the workers count, Redis's version and memory, and
settled deliveries per minute / 5 minutes / hour over 15 min, 1 h, 24 h or 7 days.

Three bounded reads sent together: ``readHistory`` (the history the workers' lateness flush
writes), ``INFO server`` + ``INFO memory`` (one round trip) and the fleet (``q.workers()``).
A read that fails leaves its part of the card empty, not the page.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...client.queue import AsyncQueue
from ...io.runner import drive_async
from ...telemetry.history import WINDOWS, History, ServerInfo, history_plan, server_plan
from .chart import throughput_panel

DEFAULT_WINDOW = "15m"
LABELS = {"15m": "15 min", "1h": "1 h", "24h": "24 h", "7d": "7 days"}


def window_of(value: str | None) -> str:
    """The window asked for, or the default for anything unknown."""
    return value if value in WINDOWS else DEFAULT_WINDOW


def history_chart(queue: str, history: History, window: str) -> str:
    """The throughput chart of ``history`` (succeeded, retried, dead per point)."""
    per = {1: "minute", 60: "hour"}.get(history.step, f"{history.step} minutes")
    return throughput_panel(history.series(), step=history.step,
                            title=f"{queue}: succeeded, retried, dead per {per}, last "
                                  f"{LABELS[window]}")


async def totals_context(q: AsyncQueue, window: str) -> dict[str, Any]:
    """The names ``_totals.html`` reads for queue ``q`` and the chart ``window``."""
    found = await asyncio.gather(
        drive_async(q.client, history_plan(q.name, window), q.config.retry_for),
        drive_async(q.client, server_plan(), q.config.retry_for),
        q.workers(), return_exceptions=True)
    for item in found:  # a bug is raised; Redis trouble leaves that part empty
        if isinstance(item, BaseException) and not isinstance(item, Exception):
            raise item
    history, server, workers = found
    context: dict[str, Any] = {"window": window, "windows": LABELS, "history": None,
                               "chart": "", "server": None, "workers": None}
    if isinstance(history, History):
        context.update(history=history, chart=history_chart(q.name, history, window))
    if isinstance(server, ServerInfo):
        context["server"] = server
    if isinstance(workers, list):
        context["workers"] = len(workers)
    return context
