"""The ``streamdelay`` command: workers, dispatchers and operator commands (docs/cli.md).

Built on click (subcommands, generated help, environment variables, parameter types).
Exit codes: 0 ok, 1 the operation failed, 2 usage error; see ``cli/exit_codes.py``'s ``run_cli``.
"""

from __future__ import annotations

import sys

import click

from .. import __version__
from . import inspect as inspect_commands
from . import job_commands, processes, queue_commands, search_commands
from . import schedules as schedule_commands
from .event_commands import events
from .exit_codes import run_cli
from .exporter_command import exporter
from .limit_commands import limit
from .result_commands import batch as batch_commands
from .result_commands import result as result_command
from .serve import serve
from .shared_options import group_url_option, with_durability_options
from .worker_commands import workers


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


# pause and resume change a topic's fate: --replicas / --replica-timeout like cancel
# (docs/guarantees.md#durability-across-failover); added here, next to their registration
for _durable in (inspect_commands.pause, inspect_commands.resume):
    with_durability_options(_durable)

for _command in (processes.worker, processes.dispatch, job_commands.enqueue, job_commands.get,
                 job_commands.cancel, job_commands.reschedule, queue_commands.stats,
                 queue_commands.claim, queue_commands.dead, processes.demo):
    cli.add_command(_command)  # cli/processes.py, cli/job_commands.py, cli/queue_commands.py
cli.add_command(exporter)  # cli/exporter_command.py
cli.add_command(schedule_commands.schedule)  # cli/schedules.py
cli.add_command(limit)  # cli/limit_commands.py
cli.add_command(result_command)  # cli/result_commands.py
cli.add_command(batch_commands)  # cli/result_commands.py: batch info
cli.add_command(serve)  # cli/serve.py
cli.add_command(events)  # cli/event_commands.py
cli.add_command(workers)  # cli/worker_commands.py
for _command in (search_commands.jobs, inspect_commands.pause, inspect_commands.resume,
                 inspect_commands.migrate):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and exit with its code."""
    sys.exit(run_cli(cli, argv))


if __name__ == "__main__":
    main()
