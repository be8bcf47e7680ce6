"""Command-line parameters added with ``streamdelay jobs`` and the CLI polish: ``--backoff``
of ``enqueue`` and the explained refusal of a past ``--at`` (docs/cli.md#enqueue)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import click

from ..base.durations import format_duration, parse_duration
from ..base.errors import ValidationError
from ..base.models import Backoff
from ..client.queue import Queue
from .support import ParamBase, UsageProblem


class BackoffOption(ParamBase):
    """Retry delays: ``10s,1m,5m`` (a schedule) or ``BASE/CAP`` such as ``2s/10m`` (exponential
    with full jitter, ``sd.Backoff``)."""

    name = "backoff"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        """Parse to a list of seconds or a ``Backoff``; the library checks the ranges."""
        if not isinstance(value, str):
            return value
        try:
            if "/" in value:
                base, _, cap = value.partition("/")
                return Backoff(parse_duration(base, field="backoff"),
                               parse_duration(cap, field="backoff"))
            return [parse_duration(step, field="backoff") for step in value.split(",")]
        except ValidationError:
            self.fail(f"{value!r} is not a list of durations (10s,1m,5m) or BASE/CAP "
                      f"(2s/10m)", param, ctx)


@contextlib.contextmanager
def past_at_explained(queue: Queue, at: datetime | float | None) -> Iterator[None]:
    """Turn the refusal of an ``--at`` beyond the queue's past tolerance into a usage error
    that names the tolerance and what to do instead."""
    try:
        yield
    except ValidationError as exc:
        if at is None or exc.field != "at" or "past_tolerance" not in str(exc):
            raise
        shown = (at.isoformat() if isinstance(at, datetime)
                 else f"{at:.3f}".rstrip("0").rstrip(".") + " (epoch seconds)")
        raise UsageProblem(
            f"--at: {shown} is more than {format_duration(queue.config.past_tolerance)} in the "
            f"past (the queue's past_tolerance); give a later --at, or --delay 0 to run the "
            f"job now") from exc
