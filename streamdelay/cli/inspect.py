"""The ``jobs``, ``pause``, ``resume`` and ``migrate`` commands of the ``streamdelay`` CLI
(docs/cli.md); ``cli/commands.py`` adds them to its group."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..base.models import JobInfo
from ..client.listing import MAX_LIMIT, STATES, JobPage
from ..protocol.layouts import SEEN_WITHIN_S
from .output import table, to_json, utc_seconds
from .shared_options import json_option, partitions_option, url_option
from .support import Duration, operator_queue

# a page of `jobs` is one state (--state): no column for it; the consumer or the last error
# goes on a line under its job (80 columns, docs/cli.md#common-rules)
JOBS_COLUMNS = ("ID", "TOPIC", "DUE (UTC)", "TRIES")
DEAD_JOBS_COLUMNS = ("ID", "TOPIC", "DIED (UTC)", "TRIES")  # a dead page: when each one died


def job_detail(job: object) -> str:
    """The line under a job: the consumer and idle time of a reserved job, else its last
    error ('' for neither)."""
    consumer = getattr(job, "consumer", None)
    if consumer is not None:
        return f"reserved by {consumer}, idle {getattr(job, 'idle_ms', 0) / 1000:.1f} s"
    error = getattr(job, "error", None) or ""
    return f"last error: {error}" if error else ""


def _state_detail(job: JobInfo) -> str:
    detail = job_detail(job)
    if job.consumer is not None:  # "reserved by ..." says the state
        return detail
    return f"{job.state}; {detail}" if detail else job.state


def jobs_table(jobs: Sequence[JobInfo], *, states: bool = False, died: bool = False) -> str:
    """The table of jobs, each job's consumer or last error on a line under it; ``states``
    (a list that spans states, such as a search) opens that line with the job's state: a
    STATE column would not fit 80 columns. ``died`` (a page of dead jobs): the time column is
    when each one died, not its last due time."""
    # a job waiting for its parents has no due time yet (docs/workflows.md)
    rows = [[j.id, j.topic, utc_seconds(j.died if died and j.died is not None else j.due)
             if j.state != "waiting" else "after parents",
             f"{j.attempts}/{j.max_attempts}"] for j in jobs]
    return table(DEAD_JOBS_COLUMNS if died else JOBS_COLUMNS, rows, align="lllr",
                 details=[_state_detail(j) if states else job_detail(j) for j in jobs])


def jobs_text(page: JobPage, state: str) -> str:
    """The table of ``jobs`` and, when there is more, the option that shows the next page."""
    if not page.jobs:
        lines = [f"no {state} jobs on this page" if page.cursor else f"no {state} jobs"]
    else:
        lines = [jobs_table(page.jobs, died=state == "dead")]
    if page.cursor:
        lines.append(f"more: add --cursor {page.cursor}")
    return "\n".join(lines)


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--state", required=True, type=click.Choice(STATES),
              help="Which jobs: delayed (by due time), ready, reserved or dead (stream order), "
                   "waiting for their parents (by enqueue time).")
@click.option("--topic", help="Only this topic.")
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), default=100, show_default=True,
              help="At most this many jobs on the page.")
@click.option("--cursor", help="Where the previous page ended (printed with it).")
@url_option
@partitions_option
@json_option
def jobs(queue_name: str, state: str, topic: str | None, limit: int, cursor: str | None,
         url: str | None, partitions: int | None, as_json: bool) -> None:
    """List one page of the jobs of QUEUE in --state; bounded work whatever the backlog.
    Read only. A page may hold fewer than --limit jobs and still have a next page.

    \b
    Examples:
      streamdelay jobs orders --state delayed --limit 20
      streamdelay jobs orders --state dead --topic order.close --json
    """
    with operator_queue(queue_name, url, partitions) as queue:
        page = queue.jobs(state, topic=topic, limit=limit, cursor=cursor)
    click.echo(to_json(page) if as_json else jobs_text(page, state))


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("topic")
@url_option
@partitions_option
def pause(queue_name: str, topic: str, url: str | None, partitions: int | None) -> None:
    """Stop every worker starting jobs of TOPIC within 1 s (running ones finish; due jobs
    still become ready). Kept in Redis until `streamdelay resume`.

    \b
    Example:
      streamdelay pause orders order.close
    """
    with operator_queue(queue_name, url, partitions) as queue:
        changed = queue.pause(topic)
    click.echo(f"paused {topic}" if changed else f"{topic} was already paused")


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("topic")
@url_option
@partitions_option
def resume(queue_name: str, topic: str, url: str | None, partitions: int | None) -> None:
    """Let workers start jobs of TOPIC again (within 1 s); its backlog drains.

    \b
    Example:
      streamdelay resume orders order.close
    """
    with operator_queue(queue_name, url, partitions) as queue:
        changed = queue.resume(topic)
    click.echo(f"resumed {topic}" if changed else f"{topic} was not paused")


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@url_option
@partitions_option
@click.option("--seen-within", type=Duration(), default=SEEN_WITHIN_S, show_default=True,
              help="A consumer of the queue that was active this recently and keeps no fleet "
                   "record (an older release) counts as live and blocks the move.")
def migrate(queue_name: str, url: str | None, partitions: int | None,
            seen_within: float) -> None:
    """Move QUEUE to record layout 2 (a waiting job's body kept once in Redis). Refused, naming
    them, while a live process cannot read layout 2; safe while this release runs, and to run
    again.

    \b
    Example:
      streamdelay migrate orders
    """
    with operator_queue(queue_name, url, partitions) as queue:
        before = queue.migrate(seen_within=seen_within)
    moved = sum(1 for layout in before if layout != 2)
    click.echo(f"{queue_name}: layout 2 on {len(before)} partition(s)"
               + (f", {moved} moved from layout 1" if moved else ", already so"))
