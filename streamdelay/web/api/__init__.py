"""The JSON API under ``/v1`` (docs/http.md): producer, operator and consumer routes."""

from __future__ import annotations

from typing import Any

from . import consumers, retention, search
from . import event_routes as events
from . import flow_routes as flows
from . import job_routes as jobs
from . import limit_routes as limits
from . import result_routes as results
from . import worker_routes as workers


def api_routes() -> list[Any]:
    """Every route handler of the JSON API."""
    return [*jobs.ROUTES, *flows.ROUTES, *results.ROUTES, *search.ROUTES, *consumers.ROUTES,
            *events.ROUTES, *limits.ROUTES, *workers.ROUTES, *retention.ROUTES]
