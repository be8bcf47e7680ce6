"""The ``jobs`` group of the ``streamdelay`` CLI (docs/cli.md#jobs): ``jobs list`` (also reached
as plain ``streamdelay jobs QUEUE --state ...``), ``jobs search`` and ``jobs bulk``. Search and
bulk drive ``Queue.search`` / ``Queue.bulk``, one bounded call at a time
(``client/search_plans.py``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import click

from ..client.listing import STATES
from ..client.queue import Queue
from ..client.search_plans import ACTIONS, MAX_SCAN, SCAN, BulkResult, SearchPage
from .inspect import jobs as list_command
from .inspect import jobs_table
from .output import WIDTH, to_json
from .shared_options import json_option, partitions_option, url_option
from .support import AtTime, Duration, operator_queue

DONE = {"cancel": "cancelled", "reschedule": "rescheduled", "replay": "replayed",
        "purge": "purged"}


class JobsGroup(click.Group):
    """``jobs`` with subcommands; a first argument that names none is the QUEUE of ``jobs
    list`` (``streamdelay jobs orders --state dead`` keeps working)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Put ``list`` in front when the first argument is not a subcommand."""
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group(cls=JobsGroup)
def jobs() -> None:
    """List, search and act on jobs by filter.

    \b
    Examples:
      streamdelay jobs orders --state delayed          (= jobs list)
      streamdelay jobs search orders --error timeout --body customer.id=42
      streamdelay jobs bulk orders cancel --state delayed --topic mail --dry-run
    """


jobs.add_command(list_command, "list")

_filters = [
    click.argument("queue_name", metavar="QUEUE"),
    click.option("--topic", help="Only this topic."),
    click.option("--state", type=click.Choice(STATES), help="Only this state (search: none "
                 "means every state, delayed first)."),
    click.option("--error", "error_text", metavar="TEXT",
                 help="A piece of the last error (any case)."),
    click.option("--body", "body_fields", metavar="PATH=VALUE", multiple=True,
                 help="A body field (customer.id=42; numbers and booleans as JSON), or a bare "
                 "PATH that must exist; repeat: all must hold."),
    click.option("--scan", type=click.IntRange(1, MAX_SCAN), default=SCAN, show_default=True,
                 help="Jobs examined per call (each call is bounded by it)."),
    click.option("--cursor", help="Go on from where a call stopped (printed with it)."),
    url_option, partitions_option, json_option,
]


def with_filters(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the filter options shared by ``search`` and ``bulk``."""
    for option in reversed(_filters):
        fn = option(fn)
    return fn


def search_text(page: SearchPage) -> str:
    """The matches of one search call, and how to go on."""
    lines = [jobs_table(page.jobs, states=True)] if page.jobs else []
    counts = f"{len(page.jobs)} found, {page.examined} examined"
    more = f"more: add --cursor {page.cursor}" if page.cursor else "complete"
    # a long cursor goes on a line of its own (80 columns, docs/cli.md#common-rules)
    lines.append(f"{counts}; {more}" if len(counts) + 2 + len(more) <= WIDTH
                 else f"{counts};\n  {more}")
    return "\n".join(lines)


@jobs.command()
@with_filters
@click.option("--all", "follow", is_flag=True,
              help="Follow the cursor to the end (each call still bounded by --scan).")
def search(queue_name: str, topic: str | None, state: str | None, error_text: str | None,
           body_fields: tuple[str, ...], scan: int, cursor: str | None, url: str | None,
           partitions: int | None, as_json: bool, follow: bool) -> None:
    """Find jobs of QUEUE by topic, state, error text and body fields. One call examines at
    most --scan jobs and prints the cursor to go on; read only.

    \b
    Examples:
      streamdelay jobs search orders --state dead --error timeout
      streamdelay jobs search orders --body customer.id=42 --all
    """
    with operator_queue(queue_name, url, partitions) as queue:
        while True:
            page = queue.search(topic=topic, state=state, error=error_text, body=body_fields,
                                scan=scan, cursor=cursor)
            click.echo(to_json(page) if as_json else search_text(page))
            cursor = page.cursor
            if not follow or cursor is None:
                return


def _run(queue: Queue, action: str, dry_run: bool, cursor: str | None,
         options: dict[str, Any], progress: bool) -> tuple[int, int, int]:
    """Bulk calls from ``cursor`` to the end: (matched, changed, examined)."""
    matched = changed = examined = 0
    while True:
        result: BulkResult = queue.bulk(action, dry_run=dry_run, cursor=cursor, **options)
        matched, changed = matched + result.matched, changed + result.changed
        examined += result.examined
        cursor = result.cursor
        if cursor is None:
            return matched, changed, examined
        if progress:  # so an interrupted run can be resumed where it stood
            click.echo(f"{DONE[action]} {changed} so far; to resume: --cursor {cursor}",
                       err=True)


@jobs.command()
@with_filters
@click.argument("action", type=click.Choice(ACTIONS))
@click.option("--delay", type=Duration(), help="reschedule: new due time, this long from now.")
@click.option("--at", "at", type=AtTime(), help="reschedule: new due time, ISO 8601 or epoch "
              "seconds.")
@click.option("--dry-run", is_flag=True, help="Only count what the action would change.")
@click.option("--yes", is_flag=True, help="Do not ask: act after the count.")
def bulk(queue_name: str, action: str, topic: str | None, state: str | None,
         error_text: str | None, body_fields: tuple[str, ...], scan: int, cursor: str | None,
         url: str | None, partitions: int | None, as_json: bool, delay: float | None,
         at: datetime | float | None, dry_run: bool, yes: bool) -> None:
    """ACTION (cancel, reschedule, replay, purge) the jobs of QUEUE a filter matches. First a
    dry run counts them (bounded calls); then, once confirmed (or with --yes), the action
    runs call by call, each job by its own atomic script. Cancel and reschedule need --state;
    replay and purge take dead jobs.

    \b
    Examples:
      streamdelay jobs bulk orders cancel --state delayed --body tenant=acme --dry-run
      streamdelay jobs bulk orders replay --error timeout --yes
      streamdelay jobs bulk orders reschedule --state delayed --topic mail --delay 1h
    """
    options: dict[str, Any] = {"topic": topic, "state": state, "error": error_text,
                               "body": body_fields, "scan": scan, "delay": delay, "at": at}
    with operator_queue(queue_name, url, partitions) as queue:
        matched, _, examined = _run(queue, action, True, cursor, options, False)
        if dry_run:
            click.echo(to_json({"action": action, "dry_run": True, "matched": matched,
                                "examined": examined}) if as_json else
                       f"would {action} {matched} job{'s' if matched != 1 else ''} "
                       f"({examined} examined)")
            return
        if matched == 0:
            click.echo(f"no job matches: nothing to {action}")
            return
        if not yes and not click.confirm(f"{action} {matched} job{'s' if matched != 1 else ''}"
                                         f" of queue {queue_name}?", err=True):
            click.echo("not confirmed: nothing changed", err=True)
            raise click.exceptions.Exit(1)
        matched, changed, examined = _run(queue, action, False, cursor, options, True)
    click.echo(to_json({"action": action, "dry_run": False, "matched": matched,
                        "changed": changed, "examined": examined}) if as_json else
               f"{DONE[action]} {changed} of {matched} matched ({examined} examined)")
