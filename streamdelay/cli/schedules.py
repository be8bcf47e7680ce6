"""``streamdelay schedule add|list|remove|pause|resume|next`` (docs/schedules.md, docs/cli.md);
``commands.py`` adds the group to the CLI."""

from __future__ import annotations

from typing import Any

import click

from ..dispatch.schedule_spec import MISSED_POLICIES, Schedule
from .output import iso_ms, table, to_json, utc_seconds
from .shared_options import json_option, partitions_option, url_option
from .support import Duration, JsonValue, operator_queue

# one row of short fields per schedule, its spec on a line under it (80 columns, docs/cli.md)
LIST_COLUMNS = ("NAME", "TOPIC", "STATE", "NEXT TICK (UTC)")


def _spec(s: Schedule) -> str:
    when = f"cron {s.cron} ({s.tz})" if s.cron is not None else f"every {s.every:g}s"
    last = utc_seconds(s.last_tick) if s.last_tick > 0 else "none yet"
    return f"{when}; missed ticks: {s.missed}; last tick {last}"


def schedules_text(found: list[Schedule]) -> str:
    """The table of ``schedule list``."""
    if not found:
        return "no schedules"
    rows = [[s.name, s.topic, "paused" if s.paused else "active",
             utc_seconds(s.next_tick) if s.next_tick >= 0 and not s.paused else "-"]
            for s in found]
    return table(LIST_COLUMNS, rows, align="llll", details=[_spec(s) for s in found])


@click.group()
def schedule() -> None:
    """Recurring jobs: a job on a topic at every tick of a cron expression or an interval,
    fired exactly once per tick by the running dispatchers (docs/schedules.md)."""


@schedule.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name")
@click.argument("topic")
@click.argument("body", metavar="[BODY_JSON]", type=JsonValue(), required=False)
@click.option("--cron", help="Cron expression (5 fields, or 6 with seconds first).")
@click.option("--every", type=Duration(), help="Interval (at least 1s), anchored at the epoch.")
@click.option("--tz", default="UTC", show_default=True, help="Time zone of --cron.")
@click.option("--ttr", type=Duration(), help="Time-to-run of each tick's job (default: 60s).")
@click.option("--max-attempts", type=int, help="Deliveries of each tick's job (default: 10).")
@click.option("--missed", type=click.Choice(MISSED_POLICIES), default="skip", show_default=True,
              help="Ticks that went by with no dispatcher: none, the latest one, or all.")
@click.option("--jitter", type=Duration(), default="0s", show_default=True,
              help="Delay each tick by up to this long (fixed per tick).")
@url_option
@partitions_option
def add(queue_name: str, name: str, topic: str, body: Any, cron: str | None,
        every: float | None, tz: str, ttr: float | None, max_attempts: int | None,
        missed: Any, jitter: float, url: str | None, partitions: int | None) -> None:
    """Declare schedule NAME (or change its spec; the same spec again changes nothing).

    \b
    Examples:
      streamdelay schedule add reports nightly report.build '{"kind": "daily"}' \\
          --cron "30 2 * * *" --tz Europe/Berlin
      streamdelay schedule add metrics heartbeat metrics.ping --every 15s
    """
    with operator_queue(queue_name, url, partitions) as queue:
        changed = queue.schedule(name, topic, body, cron=cron, every=every, tz=tz, ttr=ttr,
                                 max_attempts=max_attempts, missed=missed, jitter=jitter)
        ticks = queue.next_ticks(name, 1)
    first = f"; next tick {iso_ms(ticks[0])}" if ticks else ""
    click.echo(f"{'declared' if changed else 'unchanged'} {name}{first}")


@schedule.command(name="list")
@click.argument("queue_name", metavar="QUEUE")
@url_option
@partitions_option
@json_option
def list_(queue_name: str, url: str | None, partitions: int | None, as_json: bool) -> None:
    """List the schedules of QUEUE (read only).

    \b
    Example:
      streamdelay schedule list reports --json
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.schedules()
    click.echo(to_json(found) if as_json else schedules_text(found))


@schedule.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name")
@url_option
@partitions_option
def remove(queue_name: str, name: str, url: str | None, partitions: int | None) -> None:
    """Remove schedule NAME and cancel its ticks not yet due.

    \b
    Example:
      streamdelay schedule remove reports nightly
    """
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.unschedule(name)
    click.echo(f"removed {name}" if found else f"no schedule {name}")


@schedule.command(name="pause")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name")
@url_option
@partitions_option
def pause_(queue_name: str, name: str, url: str | None, partitions: int | None) -> None:
    """Pause schedule NAME: no more ticks (those enqueued ahead and not yet due are cancelled).

    \b
    Example:
      streamdelay schedule pause reports nightly
    """
    with operator_queue(queue_name, url, partitions) as queue:
        changed = queue.pause_schedule(name)
    click.echo(f"paused {name}" if changed else f"{name} was already paused")


@schedule.command(name="resume")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name")
@url_option
@partitions_option
def resume_(queue_name: str, name: str, url: str | None, partitions: int | None) -> None:
    """Resume schedule NAME from its next tick (ticks that fell in the pause are not run).

    \b
    Example:
      streamdelay schedule resume reports nightly
    """
    with operator_queue(queue_name, url, partitions) as queue:
        changed = queue.pause_schedule(name, paused=False)
    click.echo(f"resumed {name}" if changed else f"{name} was not paused")


@schedule.command(name="next")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name")
@click.option("--count", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="How many ticks to show.")
@url_option
@partitions_option
@json_option
def next_(queue_name: str, name: str, count: int, url: str | None, partitions: int | None,
          as_json: bool) -> None:
    """Show the next ticks of schedule NAME (UTC; nothing while paused).

    \b
    Example:
      streamdelay schedule next reports nightly --count 10
    """
    with operator_queue(queue_name, url, partitions) as queue:
        ticks = queue.next_ticks(name, count)
    if as_json:
        click.echo(to_json(ticks))
    else:
        click.echo("\n".join(iso_ms(t) for t in ticks) if ticks else f"{name} is paused")
