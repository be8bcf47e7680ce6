"""The ``limit`` command of the ``streamdelay`` CLI (docs/limits.md); ``commands.py`` adds it
to its group."""

from __future__ import annotations

import click

from .options import json_option, partitions_option, url_option, with_durability_options
from .output import to_json
from .support import operator_queue


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("topic")
@click.option("--rate", help="At most this many job starts per period, across all workers: "
              "COUNT/PERIOD, e.g. 100/s, 5/m, 1/h, 10/500ms.")
@click.option("--concurrency", type=int,
              help="At most this many jobs of TOPIC running at once, across all workers.")
@click.option("--clear", is_flag=True, help="Remove TOPIC's limit.")
@url_option
@partitions_option
@with_durability_options
@json_option
def limit(queue_name: str, topic: str, rate: str | None, concurrency: int | None, clear: bool,
          url: str | None, partitions: int | None, as_json: bool) -> None:
    """Set (or with --clear remove) the rate and concurrency limit of TOPIC, held across every
    worker process; without options, show it (as Queue.limits() reads it; Queue.limit(topic,
    clear=True) is --clear). Each call sets the whole limit: an option left
    out is no longer limited. Workers see a change within 1 s.

    \b
    Examples:
      streamdelay limit orders mail.send --rate 100/s --concurrency 10
      streamdelay limit orders mail.send --clear
    """
    if clear and (rate is not None or concurrency is not None):
        raise click.UsageError("give either --clear or --rate/--concurrency, not both")
    with operator_queue(queue_name, url, partitions) as queue:
        if clear or rate is not None or concurrency is not None:
            changed = queue.limit(topic, rate=rate, concurrency=concurrency, clear=clear)
        else:
            changed = None
        current = queue.limits().get(topic)
    shown = str(current) if current is not None else "no limit"
    if as_json:
        click.echo(to_json({"topic": topic, "changed": changed,
                            "rate": None if current is None or current.rate is None
                            else str(current.rate),
                            "concurrency": None if current is None else current.concurrency}))
    elif changed is None:
        click.echo(f"{topic}: {shown}")
    else:
        click.echo(f"{topic}: {shown}" + ("" if changed else " (unchanged)"))
