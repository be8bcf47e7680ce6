"""The ``limit`` command of the ``streamdelay`` CLI (docs/limits.md); ``commands.py`` adds it
to its group."""

from __future__ import annotations

import click

from .output import to_json
from .shared_options import json_option, partitions_option, url_option, with_durability_options
from .support import operator_queue


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("topic")
@click.option("--rate", help="At most this many job starts per period, across all workers: "
              "COUNT/PERIOD, e.g. 100/s, 5/m, 1/h, 10/500ms.")
@click.option("--concurrency", type=int,
              help="At most this many jobs of TOPIC running at once, across all workers.")
@click.option("--key-rate", help="At most this many job starts per period for each fairness "
              "key of TOPIC (docs/limits.md#key-limits): COUNT/PERIOD.")
@click.option("--key-concurrency", type=int,
              help="At most this many jobs of each fairness key of TOPIC running at once.")
@click.option("--clear", is_flag=True, help="Remove TOPIC's limit.")
@url_option
@partitions_option
@with_durability_options
@json_option
def limit(queue_name: str, topic: str, rate: str | None, concurrency: int | None,
          key_rate: str | None, key_concurrency: int | None, clear: bool,
          url: str | None, partitions: int | None, as_json: bool) -> None:
    """Set (or with --clear remove) the rate and concurrency limit of TOPIC, held across every
    worker process; without options, show it (as Queue.limits() reads it; Queue.limit(topic,
    clear=True) is --clear). Each call sets the whole limit: an option left
    out is no longer limited. Workers see a change within 1 s.

    \b
    Examples:
      streamdelay limit orders mail.send --rate 100/s --concurrency 10
      streamdelay limit orders report.build --key-concurrency 2 --key-rate 10/m
      streamdelay limit orders mail.send --clear
    """
    given = [v for v in (rate, concurrency, key_rate, key_concurrency) if v is not None]
    if clear and given:
        raise click.UsageError("give either --clear or --rate/--concurrency/--key-rate/"
                               "--key-concurrency, not both")
    with operator_queue(queue_name, url, partitions) as queue:
        if clear or given:
            changed = queue.limit(topic, rate=rate, concurrency=concurrency, key_rate=key_rate,
                                  key_concurrency=key_concurrency, clear=clear)
        else:
            changed = None
        current = queue.limits().get(topic)
    shown = str(current) if current is not None else "no limit"
    if as_json:
        click.echo(to_json({"topic": topic, "changed": changed,
                            "rate": None if current is None or current.rate is None
                            else str(current.rate),
                            "concurrency": None if current is None else current.concurrency,
                            "key_rate": None if current is None or current.key_rate is None
                            else str(current.key_rate),
                            "key_concurrency": None if current is None
                            else current.key_concurrency}))
    elif changed is None:
        click.echo(f"{topic}: {shown}")
    else:
        click.echo(f"{topic}: {shown}" + ("" if changed else " (unchanged)"))
