"""The commands on a queue as a whole: ``stats``, ``claim`` and the ``dead`` group (list,
replay, purge the dead letters, and their retention) (docs/cli.md); ``cli/commands.py`` adds
them to its group.
"""

from __future__ import annotations

import contextlib
import textwrap

import click

from ..base.errors import JobNotFound
from .loops import watch_stats
from .output import claim_text, dead_job_of, dead_text, stats_json, stats_text, to_json
from .shared_options import (
    json_option,
    partitions_option,
    url_option,
    with_dead_options,
    with_durability_options,
)
from .support import Duration, operator_queue


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@url_option
@partitions_option
@json_option
@click.option("--watch", is_flag=True, help="Refresh until Ctrl-C.")
@click.option("--interval", type=Duration(), default="1s", show_default=True,
              help="Refresh period of --watch.")
def stats(queue_name: str, url: str | None, partitions: int | None, as_json: bool, watch: bool,
          interval: float) -> None:
    """Per topic: group, delayed, ready, reserved, dead and lag (how long the oldest due but
    undelivered job has waited; milliseconds as lag_ms in --json); then paused topics and
    limits.

    \b
    Examples:
      streamdelay stats orders
      streamdelay stats orders --watch --interval 500ms
    """
    with operator_queue(queue_name, url, partitions) as queue:
        if watch:
            with contextlib.suppress(KeyboardInterrupt):
                watch_stats(queue, max(interval, 0.05), as_json)
            return
        result = queue.stats()
    click.echo(stats_json(result) if as_json else stats_text(result))


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--group", required=True, help="The consumer group whose stuck jobs to take.")
@click.option("--topic", help="Only this topic (default: every topic the group serves).")
@click.option("--min-idle", type=Duration(),
              help="Idle at least this long (default: each job's own ttr).")
@click.option("--to", "to", metavar="CONSUMER", help="Hand the jobs to this consumer instead.")
@url_option
@partitions_option
@json_option
def claim(queue_name: str, group: str, topic: str | None, min_idle: float | None, to: str | None,
          url: str | None, partitions: int | None, as_json: bool) -> None:
    """Re-queue stuck jobs: reserved by GROUP and idle past --min-idle, so any live worker gets
    them next (exit 1 when no topic of QUEUE is served by GROUP).

    \b
    Examples:
      streamdelay claim orders --group billing --min-idle 60s
      streamdelay claim orders --group billing --topic order.close --to host-1-42-ab12
    """
    with operator_queue(queue_name, url, partitions) as queue:
        result = queue.claim(group, topic=topic, min_idle=min_idle, to=to)
    click.echo(to_json(result) if as_json else claim_text(result, group, to))


@click.group()
def dead() -> None:
    """Dead-letter jobs: list, replay or purge them; the retention in force.

    \b
    Examples:
      streamdelay dead list orders --topic order.close
      streamdelay dead replay orders --id close-42 --delay 1m
      streamdelay dead purge orders --topic order.close
      streamdelay dead retention orders
    """


@dead.command("list")
@with_dead_options
@click.option("--limit", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="At most this many jobs, the oldest first.")
@json_option
def dead_list(queue_name: str, topic: str | None, job_id: str | None, url: str | None,
              partitions: int | None, limit: int, as_json: bool) -> None:
    """List the oldest dead jobs with their last error.

    \b
    Example:
      streamdelay dead list orders --topic order.close --limit 20
    """
    with operator_queue(queue_name, url, partitions) as queue:
        if job_id is None:
            jobs = queue.dead_list(topic, limit)
        else:
            info = queue.get(job_id)
            if info is None or info.state != "dead" or topic not in (None, info.topic):
                raise JobNotFound(f"no dead job {job_id!r} in queue {queue_name!r}", job_id=job_id)
            jobs = [dead_job_of(info)]
    click.echo(to_json(jobs) if as_json else dead_text(jobs))


@dead.command("replay")
@with_dead_options
@click.option("--delay", type=Duration(), help="Due this long from now (default: now).")
@with_durability_options
def dead_replay(queue_name: str, topic: str | None, job_id: str | None, url: str | None,
                partitions: int | None, delay: float | None) -> None:
    """Put dead jobs back as new jobs (attempts reset), due now or after --delay.

    \b
    Example:
      streamdelay dead replay orders --topic order.close --delay 30s
    """
    with operator_queue(queue_name, url, partitions) as queue:
        count = queue.dead_replay(topic, job_id, delay)
    if job_id is not None and count == 0:
        raise JobNotFound(f"no dead job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    click.echo(f"replayed {count} dead job(s)")


@dead.command("purge")
@with_dead_options
@with_durability_options
def dead_purge(queue_name: str, topic: str | None, job_id: str | None, url: str | None,
               partitions: int | None) -> None:
    """Forget dead jobs for good (all of them, or those of --topic / --id).

    \b
    Example:
      streamdelay dead purge orders --id close-42
    """
    with operator_queue(queue_name, url, partitions) as queue:
        count = queue.dead_purge(topic, job_id)
    if job_id is not None and count == 0:
        raise JobNotFound(f"no dead job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    click.echo(f"purged {count} dead job(s)")


@dead.command("retention")
@click.argument("queue_name", metavar="QUEUE")
@url_option
@partitions_option
@json_option
def dead_retention(queue_name: str, url: str | None, partitions: int | None,
                   as_json: bool) -> None:
    """Show the dead-letter retention in force (dead_ttl, dead_max: set by the queue's
    processes, applied by its dispatchers; docs/reliability.md#dead-letter-retention).

    \b
    Example:
      streamdelay dead retention orders --json
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.dead_retention()
    click.echo(to_json(found) if as_json else textwrap.fill(found.text(), 80))
