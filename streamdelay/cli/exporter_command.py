"""The ``streamdelay exporter`` command (added to the CLI group in ``cli/commands.py``)."""

from __future__ import annotations

import click

from ..telemetry.prometheus import port
from .exit_codes import service_logging
from .shared_options import log_level_option, partitions_option, url_option
from .support import library_call


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.option("--port", "listen_port", type=click.IntRange(0, 65535), required=True, metavar="PORT",
              help="Serve Prometheus metrics at http://ADDR:PORT/metrics.")
@click.option("--addr", default="0.0.0.0", show_default=True, help="Address to listen on.")
@url_option
@partitions_option
@log_level_option
def exporter(queue_name: str, listen_port: int, addr: str, url: str | None,
             partitions: int | None, log_level: str) -> int:
    """Serve the queue-level gauges of QUEUE for Prometheus until SIGINT/SIGTERM.

    Jobs by topic and state (delayed, ready, reserved, dead) and the lag of each topic, read
    at each scrape with one bounded call per partition; writes nothing. One exporter per queue
    is enough however many workers run. Needs the extra: pip install 'streamdelay[metrics]'.

    \b
    Example:
      streamdelay exporter orders --port 9464 --url redis://redis:6379/0
    """
    from ..metrics.queue_exporter import exporter_queue, serve_exporter

    service_logging(log_level)
    queue = library_call(lambda: exporter_queue(queue_name, url, partitions))
    try:
        library_call(lambda: serve_exporter(queue, port(listen_port, "port"), addr))
    finally:
        queue.close()
    return 0
