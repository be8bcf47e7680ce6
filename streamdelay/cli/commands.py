"""The ``streamdelay`` command: workers, dispatchers and operator commands (docs/cli.md).

Built on click (subcommands, generated help, environment variables, parameter types).
Exit codes: 0 ok, 1 the operation failed, 2 usage error; see ``cli/running.py``'s ``run_cli``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from datetime import datetime
from typing import Any

import click

from .. import __version__
from ..base.errors import JobNotFound
from ..base.masking import mask_url
from ..producer.queue import Queue
from ..redis_io.config import DEFAULT_URL, QueueConfig, resolve_url
from . import inspect as inspect_commands
from . import schedules as schedule_commands
from . import searching as search_commands
from .events import events
from .exporter import exporter
from .limits import limit
from .loading import load_worker, with_overrides
from .loops import serve_dispatcher, watch_stats
from .options import (
    group_url_option,
    json_option,
    log_format_option,
    log_level_option,
    partitions_option,
    url_option,
    with_dead_options,
    with_durability_options,
    with_job_options,
)
from .output import (
    claim_text,
    dead_job_of,
    dead_text,
    enqueue_text,
    job_text,
    stats_json,
    stats_text,
    to_json,
    when,
)
from .params import BackoffOption, past_at_explained
from .results import batch as batch_commands
from .results import result as result_command
from .running import run_cli, service_logging
from .serve import serve
from .support import (
    PARTITIONS_ENV,
    URL_ENV,
    AtTime,
    Duration,
    HeaderPair,
    JsonValue,
    library_call,
    one_time,
    operator_queue,
)

log = logging.getLogger("streamdelay.cli")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="streamdelay")
@group_url_option
def cli() -> None:
    """Delayed jobs on Redis Streams: run workers and dispatchers, inspect and operate queues.

    Every command takes --url (or STREAMDELAY_URL), before or after the command's name;
    commands on a queue take --partitions (or STREAMDELAY_PARTITIONS). Durations: 250ms, 30s,
    5m, 2h, 1d.
    Exit codes: 0 ok, 1 operation failed, 2 usage error.

    \b
    Example:
      streamdelay enqueue orders order.close '{"order_id": 42}' --delay 15m --id close-42
    """


@cli.command()
@click.argument("target", metavar="MODULE:WORKER")
@url_option
@click.option("--concurrency", type=click.IntRange(1, 100_000), help="Handlers run at once.")
@click.option("--group", help="Consumer group (overrides the Worker's).")
@click.option("--dispatch/--no-dispatch", default=None,
              help="Run the embedded dispatcher (default: the Worker's setting, normally on).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve this process's Prometheus metrics at :PORT/metrics.")
@partitions_option
@log_level_option
@log_format_option
def worker(target: str, url: str | None, concurrency: int | None, group: str | None,
           dispatch: bool | None, metrics_port: int | None, partitions: int | None,
           log_level: str, log_format: str) -> int:
    """Run the streamdelay Worker object found at MODULE:WORKER until SIGINT/SIGTERM.

    Imports MODULE (the current directory is on the path) and takes the Worker named WORKER
    (or a function returning one; with just MODULE, its only Worker). --url, --concurrency,
    --group, --no-dispatch and --partitions override the object's settings. Redis outages
    are ridden out.

    \b
    Example:
      streamdelay worker myapp.jobs:worker --concurrency 64 --url redis://redis:6379/0
    """
    service_logging(log_level, log_format)
    if url is not None:
        os.environ[URL_ENV] = url  # a module-level Queue(...) without url= picks it up
    if partitions is not None:  # checked first: a bad value would break the module's import
        library_call(lambda: QueueConfig("check", DEFAULT_URL, partitions=partitions))
        os.environ[PARTITIONS_ENV] = str(partitions)  # ... and without partitions=
    chosen = library_call(lambda: with_overrides(load_worker(target), url=url,
                                                 concurrency=concurrency, group=group,
                                                 dispatch=dispatch, partitions=partitions))
    if metrics_port is not None:
        chosen = library_call(lambda: chosen.replace(metrics_port=metrics_port))
    log.info("worker %s: queue %s (%d partition(s)), group %s, topics %s, concurrency %d, "
             "dispatcher %s, redis %s", chosen.consumer, chosen.config.name,
             chosen.config.partitions, chosen.group, ", ".join(sorted(chosen.handlers)),
             chosen.concurrency, "on" if chosen.dispatch else "off",
             mask_url(chosen.config.url))
    chosen.run()
    log.info("worker %s stopped: %s", chosen.consumer,
             ", ".join(f"{name} {count}" for name, count in chosen.counts.items()))
    return 0


@cli.command()
@click.argument("queue_name", metavar="QUEUE")
@url_option
@partitions_option
@log_level_option
@log_format_option
def dispatch(queue_name: str, url: str | None, partitions: int | None, log_level: str,
             log_format: str) -> int:
    """Move due jobs of QUEUE into their topic streams until SIGINT/SIGTERM.

    Workers embed a dispatcher by default; run this for workers started with --no-dispatch.
    Any number may run at once. Redis outages are ridden out (each retry is logged).

    \b
    Example:
      streamdelay dispatch orders --url redis://redis:6379/0
    """
    service_logging(log_level, log_format)
    config: QueueConfig = library_call(
        lambda: Queue(queue_name, url=url, partitions=partitions).config)
    log.info("dispatching queue %s (%d partition(s)) at %s", config.name, config.partitions,
             mask_url(config.url))
    promoted = asyncio.run(serve_dispatcher(config))
    log.info("dispatcher stopped: promoted %d job(s)", promoted)
    return 0


@cli.command()
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
            keep_result: float | None, max_wait: float | None, backoff: Any,
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
                               on_parent_failure=on_parent_failure)
    click.echo(to_json(result) if as_json else enqueue_text(result, replace))


@cli.command()
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


@cli.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("job_id", metavar="ID")
@url_option
@partitions_option
@with_durability_options
def cancel(queue_name: str, job_id: str, url: str | None, partitions: int | None) -> None:
    """Remove a job in any state; it is never delivered afterwards (exit 1 when there is none).

    \b
    Example:
      streamdelay cancel orders close-42
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.cancel(job_id)
    if not found:
        raise JobNotFound(f"no job {job_id!r} in queue {queue_name!r}", job_id=job_id)
    click.echo(f"cancelled {job_id}")


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.group()
def dead() -> None:
    """Dead-letter jobs: list, replay or purge them.

    \b
    Examples:
      streamdelay dead list orders --topic order.close
      streamdelay dead replay orders --id close-42 --delay 1m
      streamdelay dead purge orders --topic order.close
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


@cli.command()
@url_option
@click.option("--jobs", type=click.IntRange(1, 100_000), default=300, hidden=True)
@click.option("--max-delay", type=Duration(), default="10s", hidden=True)
@click.option("--dashboard", is_flag=True,
              help="Then serve the demo queue's dashboard on http://127.0.0.1:8080/ until "
                   "Ctrl-C (needs streamdelay[web]).")
@click.option("--dashboard-port", type=click.IntRange(1, 65535), default=8080, hidden=True)
def demo(url: str | None, jobs: int, max_delay: float, dashboard: bool,
         dashboard_port: int) -> int:
    """Watch the main job work: a few hundred delayed jobs, a worker, a retry, a dead job.

    Uses the Redis at --url / STREAMDELAY_URL when it answers, else starts a private
    redis-server (or valkey-server) on a free port, else the embedded Valkey of
    streamdelay[embedded]; stopped at exit. Ends by itself in well under a minute.

    \b
    Example:
      streamdelay demo
      streamdelay demo --dashboard   # then look at its queue on http://127.0.0.1:8080/
    """
    from .demo import DemoSettings, run_demo

    settings = library_call(lambda: DemoSettings(jobs=jobs, max_delay=max(max_delay, 0.6)))
    return run_demo(resolve_url(url), settings, dashboard_port=dashboard_port if dashboard
                    else None)


# pause and resume change a topic's fate: --replicas / --replica-timeout like cancel
# (docs/guarantees.md#durability-across-failover); added here, next to their registration
for _durable in (inspect_commands.pause, inspect_commands.resume):
    with_durability_options(_durable)

cli.add_command(exporter)  # cli/exporter.py
cli.add_command(schedule_commands.schedule)  # cli/schedules.py
cli.add_command(limit)  # cli/limits.py
cli.add_command(result_command)  # cli/results.py
cli.add_command(batch_commands)  # cli/results.py: batch info
cli.add_command(serve)  # cli/serve.py
cli.add_command(events)  # cli/events.py
for _command in (search_commands.jobs, inspect_commands.pause, inspect_commands.resume,
                 inspect_commands.migrate):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and exit with its code."""
    sys.exit(run_cli(cli, argv))


if __name__ == "__main__":
    main()
