"""The ``workers`` command of the ``streamdelay`` CLI: the live consumers of a queue as
``Queue.workers`` reads them from the fleet record (docs/cli.md#workers,
docs/operations.md#workers); ``commands.py`` adds it to its group."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict

import click

from ..base.errors import WorkerNotFound
from ..base.fleet import WorkerInfo
from .output import lag_text, packed, to_json
from .shared_options import json_option, partitions_option, url_option
from .support import OperationFailed, operator_queue

RUNNING_LISTED = 8  # running jobs a worker's block names (all of them in --json)


def worker_lines(info: WorkerInfo, now: float) -> list[str]:
    """One worker as a block within 80 columns: name, state, jobs, uptime and last renewal;
    its group, topics, pid, host and version; then the jobs it runs, each with how long."""
    jobs = f"{info.running_count}/{info.concurrency} jobs" if info.kind == "worker" \
        else "pull consumer"
    up = [f"up {lag_text(int((now - info.started) * 1000))}"] if info.kind == "worker" else []
    lines = packed([info.name, info.state, jobs, *up,
                    f"seen {lag_text(int((now - info.last_seen) * 1000))} ago"])
    where = [f"pid {info.pid} on {info.host}", f"v{info.version}"] if info.pid else []
    lines += ["  " + line for line in packed([f"group {info.group}:",
                                              *(info.topics or ("(no topics)",)), *where])]
    if info.running:
        shown = [f"{job_id} ({lag_text(int((now - since) * 1000))})" for job_id, since
                 in list(zip(info.running, info.running_since, strict=False))[:RUNNING_LISTED]]
        more = info.running_count - len(shown)
        lines += ["  " + line for line in packed(
            ["running:", *shown, *([f"and {more} more"] if more > 0 else [])])]
    return [line if len(line) <= 80 else line[:77] + "..." for line in lines]


def workers_text(found: Sequence[WorkerInfo], now: float) -> str:
    """Every live worker's block, a blank line between two."""
    if not found:
        return "no live workers"
    return "\n\n".join("\n".join(worker_lines(info, now)) for info in found)


@click.command()
@click.argument("queue_name", metavar="QUEUE")
@click.argument("name", required=False)
@click.option("--quiet", "quiet_name", metavar="NAME", default=None,
              help="Quiet that worker: it takes no new jobs and finishes its running ones.")
@click.option("--stop", "stop_name", metavar="NAME", default=None,
              help="Stop that worker gracefully (as SIGTERM: it finishes its running jobs).")
@url_option
@partitions_option
@json_option
def workers(queue_name: str, name: str | None, quiet_name: str | None, stop_name: str | None,
            url: str | None, partitions: int | None, as_json: bool) -> None:
    """Show the live workers of QUEUE (and its pull/HTTP consumers): state, jobs running out
    of concurrency, uptime, last renewal, group, topics, pid, host and version, and the jobs
    each runs now (as Queue.workers() reads them: about a second old). With NAME,
    that worker only (exit 1 when no live worker has that name). --quiet NAME or --stop NAME
    tells that worker process to quiet or stop; it learns of it within 2 s (exit 1 when no
    live worker has that name).

    \b
    Examples:
      streamdelay workers orders
      streamdelay workers orders web-1-4242-ab12 --json
      streamdelay workers orders --quiet web-1-4242-ab12
      streamdelay workers orders --stop web-1-4242-ab12
    """
    if quiet_name is not None or stop_name is not None:
        if name is not None or (quiet_name is not None and stop_name is not None):
            raise click.UsageError("give one of NAME, --quiet NAME, --stop NAME")
        command(queue_name, url, partitions, quiet_name, stop_name, as_json)
        return
    with operator_queue(queue_name, url, partitions) as queue:
        found = queue.workers()
    if name is not None:
        found = [w for w in found if w.name == name]
        if not found:
            raise OperationFailed(f"no live worker named {name!r} on queue {queue_name!r} "
                                  f"(see: streamdelay workers {queue_name})")
    if as_json:
        rows = [asdict(w) for w in found]
        click.echo(to_json(rows[0] if name is not None else rows))
    else:
        click.echo(workers_text(found, time.time()))


def command(queue_name: str, url: str | None, partitions: int | None, quiet_name: str | None,
            stop_name: str | None, as_json: bool) -> None:
    """``--quiet NAME`` / ``--stop NAME``: ``Queue.quiet_worker`` / ``stop_worker``, one line
    (docs/operations.md#quiet-and-stop)."""
    verb = "quiet" if quiet_name is not None else "stop"
    target = quiet_name or stop_name or ""
    with operator_queue(queue_name, url, partitions) as queue:
        act = queue.quiet_worker if verb == "quiet" else queue.stop_worker
        try:
            changed = act(target)
        except WorkerNotFound as exc:
            raise OperationFailed(f"{exc} on queue {queue_name!r} (see: streamdelay workers "
                                  f"{queue_name})") from None
    if as_json:
        click.echo(to_json({"name": target, "command": verb, "changed": changed}))
    elif changed:
        click.echo(f"asked worker {target} to {verb} (it learns of it within 2 s)")
    else:
        click.echo(f"worker {target} was already asked to "
                   f"{'stop' if verb == 'stop' else 'quiet or stop'}")
