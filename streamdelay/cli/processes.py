"""The commands that run the queue's processes: ``worker`` and ``dispatch`` (until SIGINT or
SIGTERM) and ``demo`` (docs/cli.md); ``cli/commands.py`` adds them to its group.
"""

from __future__ import annotations

import asyncio
import logging
import os

import click

from ..base.masking import mask_url
from ..client.queue import Queue
from ..consume.processes.executor_settings import MAX_PROCESSES
from ..io.config import DEFAULT_URL, QueueConfig, resolve_url
from .exit_codes import service_logging
from .loading import load_worker, with_overrides
from .loops import serve_dispatcher
from .shared_options import log_format_option, log_level_option, partitions_option, url_option
from .support import PARTITIONS_ENV, URL_ENV, Duration, library_call

log = logging.getLogger("streamdelay.cli")


@click.command()
@click.argument("target", metavar="MODULE:WORKER")
@url_option
@click.option("--concurrency", type=click.IntRange(1, 100_000), help="Handlers run at once.")
@click.option("--group", help="Consumer group (overrides the Worker's).")
@click.option("--dispatch/--no-dispatch", default=None,
              help="Run the embedded dispatcher (default: the Worker's setting, normally on).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
              help="Serve this process's Prometheus metrics at :PORT/metrics.")
@click.option("--health-port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help="Serve GET /livez and /readyz at :PORT for probes (docs/operations.md).")
@click.option("--processes", type=click.IntRange(1, MAX_PROCESSES), default=None, metavar="N",
              help="Run the handlers in N child processes (executor=\"process\": CPU-bound "
                   "work on N cores, hard handler_timeout; docs/worker.md#executors).")
@partitions_option
@log_level_option
@log_format_option
def worker(target: str, url: str | None, concurrency: int | None, group: str | None,
           dispatch: bool | None, metrics_port: int | None, health_port: int | None,
           processes: int | None, partitions: int | None, log_level: str, log_format: str
           ) -> int:
    """Run the streamdelay Worker object found at MODULE:WORKER until SIGINT/SIGTERM.

    Imports MODULE (the current directory is on the path) and takes the Worker named WORKER
    (or a function returning one; with just MODULE, its only Worker). --url, --concurrency,
    --group, --no-dispatch and --partitions override the object's settings; --processes N
    runs its handlers in N child processes. Redis outages are ridden out.

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
    if health_port is not None:
        chosen = library_call(lambda: chosen.replace(health_port=health_port))
    if processes is not None:  # docs/worker.md#executors
        chosen = library_call(lambda: chosen.replace(executor="process", processes=processes))
    log.info("worker %s: queue %s (%d partition(s)), group %s, topics %s, %s, "
             "dispatcher %s, redis %s", chosen.consumer, chosen.config.name,
             chosen.config.partitions, chosen.group, ", ".join(sorted(chosen.handlers)),
             f"concurrency {chosen.concurrency}" if chosen.processes is None
             else f"{chosen.processes} handler process(es)", "on" if chosen.dispatch else "off",
             mask_url(chosen.config.url))
    chosen.run()
    log.info("worker %s stopped: %s", chosen.consumer,
             ", ".join(f"{name} {count}" for name, count in chosen.counts.items()))
    return 0


@click.command()
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


@click.command()
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
