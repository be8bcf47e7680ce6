"""Options shared by several ``streamdelay`` commands (``--url``, ``--partitions``, ``--json`` ...).

Both ``--url`` and ``--partitions`` also come from the environment (``STREAMDELAY_URL``,
``STREAMDELAY_PARTITIONS``), the same variables a ``sd.Queue`` without those arguments reads.
"""

from __future__ import annotations

from typing import Any

import click

from ..io.config import DEFAULT_URL
from .support import DURABILITY_META, PARTITIONS_ENV, URL_ENV, Duration

GROUP_URL_META = "streamdelay.url"  # `streamdelay --url URL COMMAND ...`
LOG_LEVELS = click.Choice(["debug", "info", "warning", "error"], case_sensitive=False)

def _group_url(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep the ``--url`` given before the command for the command's own ``--url``."""
    if value is not None:
        ctx.meta[GROUP_URL_META] = value
    return value


def _command_url(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """The command's ``--url``: given after the command, else given before it, else
    ``STREAMDELAY_URL``, else None (the default URL)."""
    source = ctx.get_parameter_source(param.name) if param.name else None
    if source is not click.core.ParameterSource.COMMANDLINE and GROUP_URL_META in ctx.meta:
        return ctx.meta[GROUP_URL_META]
    return value


group_url_option = click.option(
    "--url", envvar=None, default=None, metavar="URL", expose_value=False, is_eager=True,
    callback=_group_url, help="Redis URL for the command; the same as giving the command "
    "--url (which wins when both are given).")
url_option = click.option(
    "--url", envvar=URL_ENV, show_envvar=True, default=None, metavar="URL",
    callback=_command_url,
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


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep ``--replicas`` / ``--replica-timeout`` for ``support.operator_queue``."""
    if value is not None and param.name is not None:
        ctx.meta.setdefault(DURABILITY_META, {})[param.name] = value
    return value


durability_options = [
    click.option("--replicas", type=int, default=None, metavar="N", expose_value=False,
                 callback=_remember,
                 help="Answer only once N replicas have the change (WAIT), else fail with "
                      "NotDurable; retrying is safe [default: 0]."),
    click.option("--replica-timeout", "replica_timeout", type=Duration(), default=None,
                 expose_value=False, callback=_remember,
                 help="How long to wait for the replicas [default: 1s]."),
]


def with_durability_options(fn: Any) -> Any:
    """Apply ``--replicas`` / ``--replica-timeout`` (docs/guarantees.md#durability) to a command
    that creates or changes jobs; ``operator_queue`` applies them to its queue."""
    for option in reversed(durability_options):
        fn = option(fn)
    return fn


job_options = [
    click.option("--priority", type=int, default=None, metavar="0-9",
                 help="Among ready jobs of its topic, higher starts first [default: 5]."),
    click.option("--key", "fairness_key", default=None, metavar="KEY",
                 help="A fairness key (tenant, customer); the id becomes {KEY}<id>."),
    click.option("--expires", type=Duration(), default=None,
                 help="Never start later than this after its due time (then dead, reason "
                      "expired)."),
]


def with_job_options(fn: Any) -> Any:
    """Apply ``--priority`` / ``--key`` / ``--expires`` (docs/producer.md#priorities-keys-and-
    expiry) to a command that enqueues; the library checks the values (one line, exit 2)."""
    for option in reversed(job_options):
        fn = option(fn)
    return fn
