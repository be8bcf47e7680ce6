"""Options shared by several ``streamdelay`` commands (``--url``, ``--partitions``, ``--json`` ...).

Both ``--url`` and ``--partitions`` also come from the environment (``STREAMDELAY_URL``,
``STREAMDELAY_PARTITIONS``), the same variables a ``sd.Queue`` without those arguments reads.
"""

from __future__ import annotations

from typing import Any

import click

from ..redis_io.config import DEFAULT_URL
from .support import PARTITIONS_ENV, URL_ENV

LOG_LEVELS = click.Choice(["debug", "info", "warning", "error"], case_sensitive=False)

url_option = click.option(
    "--url", envvar=URL_ENV, show_envvar=True, default=None, metavar="URL",
    help=f"Redis URL (redis://[:password@]host:port/db) [default: {DEFAULT_URL}]",
)
partitions_option = click.option(
    "--partitions", envvar=PARTITIONS_ENV, show_envvar=True, default=None, metavar="P", type=int,
    help="Partitions of the queue; must match the count it was created with [default: 1].",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
log_level_option = click.option("--log-level", type=LOG_LEVELS, default="info", show_default=True,
                                help="How much to log on stderr (debug: a line per job start "
                                "and settlement).")
log_format_option = click.option("--log-format", type=click.Choice(["text", "json"]),
                                 default="text", show_default=True,
                                 help="Log lines as text or as one JSON object per line.")

dead_options = [click.argument("queue_name", metavar="QUEUE"),
                click.option("--topic", help="Only this topic."),
                click.option("--id", "job_id", help="Only this job."), url_option,
                partitions_option]


def with_dead_options(fn: Any) -> Any:
    """Apply the QUEUE / --topic / --id / --url / --partitions options of the ``dead`` commands."""
    for option in reversed(dead_options):
        fn = option(fn)
    return fn
