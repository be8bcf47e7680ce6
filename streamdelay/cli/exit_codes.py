"""Running a ``streamdelay`` command: every outcome one exit code and at most one line.

Exit codes: 0 ok, 1 the operation failed (no such job or group, Redis unreachable), 2 usage
error (bad arguments, bad JSON, bad duration, a value the library refuses). Every error is one
line on stderr, with any password masked; ``STREAMDELAY_DEBUG=1`` re-raises for a traceback.
The log lines of the long-running commands mask the same secrets (``service_logging``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click
import redis
from click.exceptions import NoArgsIsHelpError

from ..base.errors import StreamdelayError, ValidationError
from ..base.masking import scrub, secrets_in
from ..telemetry.logs import service_logging as telemetry_logging
from .support import (
    DEBUG_ENV,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PARTITIONS_ENV,
    URL_ENV,
    debug_wanted,
)

_SECRETS: list[str] = []  # passwords of the running command's URLs (set by run_cli)


def service_logging(level: str, fmt: str = "text", extra_secrets: Sequence[str] = ()) -> None:
    """Log lines on stderr for the long-running commands (``worker``, ``dispatch``): ``text``
    or ``json`` (``telemetry.logs``), secrets of the command line and environment masked, and
    ``extra_secrets`` too (``serve``'s bearer tokens)."""
    secrets = [*(_SECRETS or _secrets(sys.argv[1:])), *extra_secrets]
    telemetry_logging(level, fmt, sorted(set(secrets), key=len, reverse=True))


def _secrets(argv: Sequence[str]) -> list[str]:
    return secrets_in([*argv, os.environ.get(URL_ENV, "")])


def _say(message: str, secrets: Sequence[str]) -> None:
    line = " ".join(scrub(message, secrets).split())
    click.echo(line, err=True)


def _usage_line(exc: click.UsageError, command: str) -> str:
    path = exc.ctx.command_path if exc.ctx is not None else command
    return _error_line_of(path, exc.format_message(), usage=True)


def command_path(group: click.Group, args: Sequence[str]) -> str:
    """``streamdelay dead list``: the (sub)commands named in ``args``, for error lines."""
    path, current = ["streamdelay"], group
    value_next = False
    for arg in args:
        if value_next:  # the value of `--url URL` given before the command
            value_next = False
            continue
        found = current.commands.get(arg)
        if found is None:
            if arg.startswith("-"):  # an option of the group (--version, --url ...)
                value_next = arg == "--url"
                continue
            break
        path.append(arg)
        if not isinstance(found, click.Group):
            break
        current = found
    return " ".join(path)


def _error_line_of(path: str, message: str, usage: bool = False) -> str:
    """One error line: the command and the message; where its help is only for a usage
    error (the help does not help with an unreachable Redis)."""
    return f"{path}: error: {message}" + (f" (see '{path} --help')" if usage else "")


def _code_for(exc: StreamdelayError) -> int:
    return EXIT_USAGE if isinstance(exc, ValidationError) else EXIT_FAILED


def _error_line(path: str, exc: StreamdelayError) -> str:
    usage = _code_for(exc) == EXIT_USAGE
    if exc.field == "partitions" and not isinstance(exc, ValidationError):
        return _error_line_of(path, f"{exc}; give this command the queue's count with "
                                    f"--partitions or {PARTITIONS_ENV}", usage)
    return _error_line_of(path, str(exc), usage)


def run_cli(group: click.Group, argv: Sequence[str] | None = None) -> int:
    """Run the click group and turn every outcome into an exit code and at most one line."""
    args = list(sys.argv[1:] if argv is None else argv)
    secrets = _secrets(args)
    _SECRETS[:] = secrets
    debug = debug_wanted()
    path = command_path(group, args)
    try:
        result = group.main(args=args, prog_name="streamdelay", standalone_mode=False)
        return result if isinstance(result, int) else EXIT_OK
    except NoArgsIsHelpError as exc:  # bare `streamdelay` (or `streamdelay dead`): its help
        click.echo(exc.ctx.get_help() if exc.ctx is not None else group.get_help(
            click.Context(group, info_name="streamdelay")))
        return EXIT_OK
    except click.UsageError as exc:
        _say(_usage_line(exc, path), secrets)
        return EXIT_USAGE
    except click.ClickException as exc:
        _say(_error_line_of(path, exc.format_message(), exc.exit_code == EXIT_USAGE), secrets)
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        _say("streamdelay: interrupted", secrets)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, StreamdelayError):
            _say(_error_line(path, exc), secrets)
            return _code_for(exc)
        if isinstance(exc, redis.RedisError):
            _say(_error_line_of(path, f"redis: {exc}"), secrets)
            return EXIT_FAILED
        _say(f"{path}: internal error: {type(exc).__name__}: {exc} "
             f"(set {DEBUG_ENV}=1 for the traceback)", secrets)
        return EXIT_FAILED
