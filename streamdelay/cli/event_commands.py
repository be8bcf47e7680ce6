"""``streamdelay events QUEUE``: print the queue's lifecycle events, and follow them
(docs/cli.md#events). Drives ``Queue.events``, the reader of every other face."""

from __future__ import annotations

import re
import time
from datetime import datetime

import click

from ..base.durations import parse_duration
from ..base.errors import ValidationError
from ..base.events import JobEvent
from .output import iso_ms, packed, to_json
from .shared_options import json_option, partitions_option, url_option
from .support import operator_queue

_AGO = re.compile(r"^\d+(\.\d+)?(ms|s|m|h|d)$")


def since_value(raw: str | None) -> object:
    """``--since``: a duration ago (``10m``), an ISO 8601 time, epoch ms, or a cursor (an
    event's ``cursor`` from ``--json``); None: every event kept."""
    if raw is None:
        return None
    text = raw.strip()
    if _AGO.match(text):
        return int((time.time() - parse_duration(text)) * 1000)
    if text.isdigit() or (re.fullmatch(r"[0-9,.\-]+", text) and "-" in text):
        return text  # epoch ms or a cursor: Queue.events checks it
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{raw!r} is not a duration ago (10m), an ISO time, epoch ms or a cursor",
            param_hint="--since") from None
    return moment if moment.tzinfo else moment.astimezone()


def event_line(event: JobEvent) -> str:
    """One event: time, kind, id, topic, attempt and the first line of its detail, within 80
    columns; what does not fit wraps onto lines indented under it (``output.packed``: a dead
    event's detail is its error, a traceback often, whole in ``--json``)."""
    return "\n".join(packed([iso_ms(event.at), f"{event.kind:<9}", event.id, event.topic,
                              f"#{event.attempt}"], event.detail))


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--topic", help="Only this topic's events.")
@click.option("--since", "since", metavar="WHEN",
              help="From this time: a duration ago (10m), an ISO time, epoch ms, or after a "
                   "cursor (--json prints each event's). Default: every event kept.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new events as they come "
                                                   "(Ctrl-C stops).")
@url_option
@partitions_option
@json_option
def events(queue_name: str, topic: str | None, since: str | None, follow: bool,
           url: str | None, partitions: int | None, as_json: bool) -> None:
    """Print the lifecycle events QUEUE keeps (enqueued, promoted, started, succeeded,
    retried, dead, cancelled, expired), oldest first; with --follow, then new ones as they
    come. Nothing unless the queue keeps events (Queue(..., events=True); docs/events.md).
    Read only.

    \b
    Examples:
      streamdelay events orders --since 10m
      streamdelay events orders --topic order.close --follow --json
    """
    start = since_value(since)
    with operator_queue(queue_name, url, partitions) as queue:
        try:
            for event in queue.events(topic, start, follow=follow):
                click.echo(to_json(event) if as_json else event_line(event))
        except ValidationError as exc:
            raise click.BadParameter(str(exc), param_hint=f"--{exc.field or 'since'}") from None
        except KeyboardInterrupt:
            return
