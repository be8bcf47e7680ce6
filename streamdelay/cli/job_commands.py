"""The commands on one job: ``enqueue``, ``get``, ``cancel``, ``reschedule`` (docs/cli.md);
``cli/commands.py`` adds them to its group.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from ..base.errors import JobNotFound
from .output import enqueue_text, job_text, to_json, when
from .params import BackoffOption, past_at_explained
from .shared_options import (
    json_option,
    partitions_option,
    url_option,
    with_durability_options,
    with_job_options,
)
from .support import AtTime, Duration, HeaderPair, JsonValue, one_time, operator_queue


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("topic")
@click.argument("body", metavar="BODY_JSON", type=JsonValue())
@click.option("--delay", type=Duration(), help="Run after this long (server clock). Default: now.")
@click.option("--at", "at", type=AtTime(),
              help="Run at this time: ISO 8601 (no offset = local time) or epoch seconds.")
@click.option("--id", "job_id", help="Job id (default: generated). Enqueueing it again is a no-op.")
@click.option("--ttr", type=Duration(), help="Time-to-run before redelivery (default: 60s).")
@click.option("--max-attempts", type=int, help="Deliveries before the job is dead (default 10).")
@click.option("--header", "headers", type=HeaderPair(), multiple=True,
              help="A job header KEY=VALUE (repeatable).")
@click.option("--replace", is_flag=True, help="If the id exists, reschedule it instead.")
@click.option("--keep-result", type=Duration(),
              help="Keep the job's result this long once it ended (default: not kept).")
@click.option("--keep-done", type=Duration(),
              help="Keep the job as a done tombstone this long once it succeeded (its id "
                   "stays taken; 0: forget it at once). Default: the worker's queue's.")
@click.option("--max-wait", type=Duration(),
              help="With --replace: never due later than the id's first enqueue plus this "
                   "(debounce).")
@click.option("--backoff", type=BackoffOption(),
              help="Retry delays: a list (10s,1m,5m; the last repeats) or exponential BASE/CAP "
                   "(2s/10m). Default: the queue's.")
@click.option("--format", "body_format", type=click.Choice(["json", "msgpack"]),
              default="json", show_default=True, help="How the body is stored.")
@with_job_options
@click.option("--after", "after", multiple=True, metavar="ID",
              help="Wait for this job to succeed first (repeat for more; docs/workflows.md).")
@click.option("--on-parent-failure", type=click.Choice(["dead", "run"]), default="dead",
              show_default=True, help="With --after: a parent that did not succeed makes this "
                                      "job dead, or it runs once all ended.")
@url_option
@partitions_option
@with_durability_options
@json_option
def enqueue(queue_name: str, topic: str, body: Any, delay: float | None,
            at: datetime | float | None, job_id: str | None, ttr: float | None,
            max_attempts: int | None, headers: tuple[tuple[str, str], ...], replace: bool,
            keep_result: float | None, keep_done: float | None, max_wait: float | None,
            backoff: Any,
            body_format: str, priority: int | None, fairness_key: str | None,
            expires: float | None, after: tuple[str, ...], on_parent_failure: str,
            url: str | None,
            partitions: int | None, as_json: bool) -> None:
    """Schedule one job of TOPIC on QUEUE with the JSON body BODY_JSON; prints id, due, outcome
    (a new job, or the id existed) and state.

    \b
    Examples:
      streamdelay enqueue orders order.close '{"order_id": 42}' --delay 15m --id close-42
      streamdelay enqueue orders report.send '{}' --at 2025-01-31T09:30:00Z
    """
    one_time(delay, at)
    with operator_queue(queue_name, url, partitions, serializer=body_format) as queue, \
            past_at_explained(queue, at):
        result = queue.enqueue(topic, body, delay=delay, at=at, id=job_id, ttr=ttr,
                               max_attempts=max_attempts, backoff=backoff,
                               headers=dict(headers) or None, replace=replace,
                               max_wait=max_wait, keep_result=keep_result,
                               priority=priority, key=fairness_key, expires=expires,
                               after=list(after) if after else None,
                               on_parent_failure=on_parent_failure, keep_done=keep_done)
    click.echo(to_json(result) if as_json else enqueue_text(result, replace))


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("job_id", metavar="ID")
@url_option
@partitions_option
@json_option
def get(queue_name: str, job_id: str, url: str | None, partitions: int | None,
        as_json: bool) -> None:
    """Show one job by id: state, due time, attempts, body (exit 1 when there is none).

    \b
    Example:
      streamdelay get orders close-42 --json
    """
    with operator_queue(queue_name, url, partitions) as queue:
        info = queue.get(job_id)
    if info is None:
        raise JobNotFound(f"no job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    click.echo(to_json(info) if as_json else job_text(info))


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("job_id", metavar="ID")
@click.option("--abort", is_flag=True,
              help="Also stop its handler if it runs (within about 1 s; docs/worker.md#abort).")
@url_option
@partitions_option
@with_durability_options
def cancel(queue_name: str, job_id: str, abort: bool, url: str | None,
           partitions: int | None) -> None:
    """Remove a job in any state; it is never delivered afterwards (exit 1 when there is none).
    With --abort a running handler is stopped too: the job ends cancelled, its result and
    event say aborted.

    \b
    Example:
      streamdelay cancel orders close-42
      streamdelay cancel orders export-7 --abort
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.cancel(job_id, abort=abort)
    if not found:
        raise JobNotFound(f"no job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    click.echo(f"{'aborted' if abort else 'cancelled'} {job_id}")


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("job_id", metavar="ID")
@click.option("--delay", type=Duration(), help="New due time: this long from now (server clock).")
@click.option("--at", "at", type=AtTime(), help="New due time: ISO 8601 or epoch seconds.")
@url_option
@partitions_option
@with_durability_options
def reschedule(queue_name: str, job_id: str, delay: float | None, at: datetime | float | None,
               url: str | None, partitions: int | None) -> None:
    """Give a job a new due time (exit 1 when there is no such job).

    \b
    Examples:
      streamdelay reschedule orders close-42 --delay 5m
      streamdelay reschedule orders close-42 --at 2025-01-31T09:30:00+01:00
    """
    one_time(delay, at)
    if delay is None and at is None:
        raise click.UsageError("give --delay or --at")
    with operator_queue(queue_name, url, partitions) as queue:
        with past_at_explained(queue, at):
            found = queue.reschedule(job_id, delay=delay, at=at)
        info = queue.get(job_id) if found else None
    if not found:
        raise JobNotFound(f"no job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    due = f"; due {when(info.due)}" if info else ""
    click.echo(f"rescheduled {job_id}{due}")
