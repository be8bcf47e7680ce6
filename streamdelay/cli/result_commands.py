"""The ``result`` and ``batch info`` commands of the ``streamdelay`` CLI (docs/results.md,
docs/workflows.md, docs/cli.md#result); ``commands.py`` adds them to its group."""

from __future__ import annotations

import click

from ..base.errors import JobNotFound, ResultTimeout
from ..base.models import JobResult
from .output import key_values, to_json, when
from .shared_options import json_option, partitions_option, url_option
from .support import Duration, operator_queue

EXIT_TIMEOUT = 3  # the job did not end within --wait (1: unknown id, 2: bad usage)


class WaitedInVain(click.ClickException):
    """The job did not end within ``--wait`` (exit code 3)."""

    exit_code = EXIT_TIMEOUT


def result_text(found: JobResult) -> str:
    """What ``result`` prints for one ended job."""
    rows = [("id", found.id), ("state", found.state), ("finished", when(found.finished))]
    if found.error:
        rows.append(("error", found.error.splitlines()[0]))
    if found.state == "succeeded":
        rows.append(("value", to_json(found.value)))
    return key_values(rows)


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("job_id", metavar="ID")
@click.option("--wait", type=Duration(), default=None,
              help="Wait up to this long for the job to end (woken by its end, no polling).")
@url_option
@partitions_option
@json_option
def result(queue_name: str, job_id: str, wait: float | None, url: str | None,
           partitions: int | None, as_json: bool) -> None:
    """Show how job ID ended (succeeded with its value, dead or cancelled with the error), kept
    for its keep_result. Exit 1 when the queue does not know ID, 3 when it has not ended (within
    --wait).

    \b
    Examples:
      streamdelay result orders close-42
      streamdelay result orders report-7 --wait 30s --json
    """
    with operator_queue(queue_name, url, partitions) as queue:
        try:
            found = queue.result(job_id, timeout=wait)
        except ResultTimeout as exc:
            raise WaitedInVain(str(exc)) from None
    if found is None:
        raise JobNotFound(f"no job {job_id!r} in queue {queue_name!r} (or its result is no "
                          f"longer kept)", job_id=job_id)
    click.echo(to_json(found) if as_json else result_text(found))


@click.group()
def batch() -> None:
    """Batches of jobs with callbacks (docs/workflows.md#batches)."""


@batch.command("info")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("batch_id", metavar="ID")
@url_option
@partitions_option
@json_option
def batch_info(queue_name: str, batch_id: str, url: str | None, partitions: int | None,
               as_json: bool) -> None:
    """Show a batch's progress: members, succeeded, dead, pending, state and its callbacks
    (exit 1 when there is no such batch).

    \b
    Example:
      streamdelay batch info etl pages
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.batch_info(batch_id)
    if found is None:
        raise JobNotFound(f"no batch {batch_id!r} in queue {queue_name!r}", job_id=batch_id)
    if as_json:
        click.echo(to_json(found))
        return
    click.echo(key_values([
        ("id", found.id), ("state", found.state), ("members", str(found.total)),
        ("succeeded", str(found.succeeded)), ("dead", str(found.dead)),
        ("pending", str(found.pending)), ("created", when(found.created)),
        ("on_success", found.on_success or "-"), ("on_complete", found.on_complete or "-")]))
