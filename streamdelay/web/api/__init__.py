"""The JSON API under ``/v1`` (docs/http.md): producer, operator and consumer routes."""

from __future__ import annotations

from typing import Any

from . import consumers, events, flows, jobs, limits, results, retention, search, workers


def api_routes() -> list[Any]:
    """Every route handler of the JSON API."""
    return [*jobs.ROUTES, *flows.ROUTES, *results.ROUTES, *search.ROUTES, *consumers.ROUTES,
            *events.ROUTES, *limits.ROUTES, *workers.ROUTES, *retention.ROUTES]
