"""The dead-letter retention in force over the JSON API (docs/http.md#dead-letter-retention,
docs/reliability.md#dead-letter-retention): what ``AsyncQueue.dead_retention`` reads, the
settings the queue's processes stored in Redis and its dispatchers apply."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get

from ..auth import needs
from .common import PREFIX, READ_ERRORS, QueueParam, errors, served

READ = needs("read")


class RetentionAnswer(msgspec.Struct):
    """``dead_ttl``: seconds a dead job is kept, ``dead_max``: how many per topic at most (the
    newest); null where unset. ``text``: the same in one line, as the dashboard shows it."""

    dead_ttl: float | None
    dead_max: int | None
    text: str


@get(f"{PREFIX}/dead/retention", opt=READ, tags=["operators"], operation_id="deadRetention",
     summary="The dead-letter retention in force", responses=errors(*READ_ERRORS))
async def dead_retention(request: Request[Any, Any, Any], queue: QueueParam) -> RetentionAnswer:
    """The dead-letter retention stored in Redis: older (``dead_ttl``) or surplus
    (``dead_max``) dead jobs are purged by the dispatchers; null and null keep them all."""
    found = await served(request, queue).dead_retention()
    return RetentionAnswer(found.dead_ttl, found.dead_max, found.text())


ROUTES = [dead_retention]
