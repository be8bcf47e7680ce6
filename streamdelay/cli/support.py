"""Plumbing of the ``streamdelay`` CLI: argument types, exit codes, logging, worker loading.

Exit codes: 0 ok, 1 the operation failed (no such job or group, Redis unreachable), 2 usage
error (bad arguments, bad JSON, bad duration, a value the library refuses). Every error is one
line on stderr, with any password masked; ``STREAMDELAY_DEBUG=1`` re-raises for a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click
import redis
from click.exceptions import NoArgsIsHelpError

from ..base.durations import parse_duration
from ..base.errors import ConnectionFailed, StreamdelayError, ValidationError
from ..base.masking import mask_url, scrub, secrets_in
from ..consumer.dispatcher import Dispatcher
from ..consumer.worker import Worker
from ..producer.queue import Queue
from ..protocol.codec import too_deep
from ..redis_io.config import QueueConfig
from ..telemetry.logs import service_logging as telemetry_logging
from .output import stats_json, stats_text

log = logging.getLogger("streamdelay.cli")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "STREAMDELAY_DEBUG"
URL_ENV = "STREAMDELAY_URL"
PARTITIONS_ENV = "STREAMDELAY_PARTITIONS"
OPERATOR_SOCKET_TIMEOUT = 2.0  # seconds per Redis round trip for operator commands
OPERATOR_GIVE_UP = 3.0  # operator commands stop retrying an unreachable Redis after this
DURABILITY_META = "streamdelay.durability"  # --replicas / --replica-timeout (options.py)
DISPATCH_STOP_GRACE = 2.0
_SECRETS: list[str] = []  # passwords of the running command's URLs (set by run_cli)


if TYPE_CHECKING:  # click 8.2+ types ParamType as a generic; at run time it is a plain class
    ParamBase = click.ParamType[Any]
else:
    ParamBase = click.ParamType


class UsageProblem(click.UsageError):
    """A value the library refused while the command was being set up (exit code 2)."""


class OperationFailed(click.ClickException):
    """The command ran but could not do what was asked (exit code 1)."""

    exit_code = EXIT_FAILED


class Duration(ParamBase):
    """``250ms``, ``30s``, ``5m``, ``2h``, ``1d`` or bare seconds -> float seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> float:
        """Parse with ``streamdelay.durations.parse_duration``."""
        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except ValidationError:
            self.fail(f"{value!r} is not a duration (examples: 250ms, 30s, 5m, 2h, 1d)",
                      param, ctx)


class AtTime(ParamBase):
    """An ISO 8601 time (``2025-01-31T09:30:00Z``; no offset = local time) or epoch seconds."""

    name = "time"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> datetime | float:
        """Parse to an aware datetime, or a float for epoch seconds."""
        if isinstance(value, datetime | float):
            return value
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 time (example: 2025-01-31T09:30:00Z) "
                      f"or epoch seconds", param, ctx)
        return moment if moment.tzinfo is not None else moment.astimezone()


class JsonValue(ParamBase):
    """A JSON document given on the command line."""

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> Any:
        """Decode the JSON text (too deep for Python's parser: the body depth error)."""
        try:
            return json.loads(value)
        except RecursionError:
            raise too_deep() from None
        except json.JSONDecodeError as exc:
            self.fail(f"not valid JSON ({exc}); quote it for the shell, e.g. "
                      f"'{{\"order_id\": 42}}'", param, ctx)


class HeaderPair(ParamBase):
    """``KEY=VALUE`` for a job header."""

    name = "key=value"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None
                ) -> tuple[str, str]:
        """Split at the first ``=``."""
        if isinstance(value, tuple):
            return value
        key, sep, item = str(value).partition("=")
        if not sep or not key:
            self.fail(f"{value!r} is not KEY=VALUE", param, ctx)
        return key, item


def library_call(action: Callable[[], Any]) -> Any:
    """Run ``action`` (building a queue, a worker ...); a refused value is a usage error."""
    try:
        return action()
    except StreamdelayError as exc:
        raise UsageProblem(str(exc)) from exc


def quiet_library_logs() -> None:
    """Operator commands speak through their exit code and one line: no retry chatter."""
    logging.getLogger("streamdelay").addHandler(logging.NullHandler())
    logging.getLogger("streamdelay").propagate = False


def service_logging(level: str, fmt: str = "text", extra_secrets: Sequence[str] = ()) -> None:
    """Log lines on stderr for the long-running commands (``worker``, ``dispatch``): ``text``
    or ``json`` (``telemetry.logs``), secrets of the command line and environment masked, and
    ``extra_secrets`` too (``serve``'s bearer tokens)."""
    secrets = [*(_SECRETS or _secrets(sys.argv[1:])), *extra_secrets]
    telemetry_logging(level, fmt, sorted(set(secrets), key=len, reverse=True))


# --- worker loading ------------------------------------------------------------------------

def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _import_module(name: str) -> Any:
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise UsageProblem(f"WORKER: cannot import module {name!r} ({exc}); run from the "
                               f"directory that contains it or set PYTHONPATH") from exc
        if _debug():
            raise
        raise _import_failed(name, exc) from exc
    except Exception as exc:
        if _debug():
            raise
        raise _import_failed(name, exc) from exc


def _import_failed(name: str, exc: Exception) -> OperationFailed:
    return OperationFailed(f"WORKER: importing module {name!r} failed: {type(exc).__name__}: "
                           f"{exc} (set {DEBUG_ENV}=1 for the traceback)")


def _find_worker(module: Any, target: str) -> Any:
    found = [value for value in vars(module).values() if isinstance(value, Worker)]
    if len(found) != 1:
        what = "no" if not found else "several"
        raise UsageProblem(f"WORKER: module {target!r} has {what} streamdelay Worker objects; "
                           f"name one as {target}:NAME")
    return found[0]


def load_worker(target: str) -> Worker:
    """Import ``module:attribute`` (or ``module`` holding exactly one Worker) and return it.

    The attribute may be a Worker or a function with no arguments that returns one.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name:
        raise UsageProblem(f"WORKER: {target!r} is not MODULE:NAME (example: myapp.jobs:worker)")
    module = _import_module(module_name)
    if not attribute:
        return _find_worker(module, target)  # type: ignore[no-any-return]
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageProblem(f"WORKER: module {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    if not isinstance(value, Worker) and callable(value):
        value = value()
    if not isinstance(value, Worker):
        raise UsageProblem(f"WORKER: {target!r} is a {type(value).__name__}, not a "
                           f"streamdelay Worker")
    return value


def with_overrides(
    worker: Worker, *, url: str | None, concurrency: int | None, group: str | None,
    dispatch: bool | None, partitions: int | None = None,
) -> Worker:
    """The worker with command-line settings applied (a new Worker with the same handlers)."""
    if (url is None and concurrency is None and group is None and dispatch is None
            and partitions in (None, worker.config.partitions)):
        return worker
    config = worker.config if url is None else dataclasses.replace(worker.config, url=url)
    if partitions is not None:
        config = dataclasses.replace(config, partitions=partitions)
    changes: dict[str, Any] = {name: value for name, value in (
        ("group", group), ("concurrency", concurrency), ("dispatch", dispatch))
        if value is not None}
    rebuilt = worker.replace(config=config, **changes)  # every other setting kept as it was
    return rebuilt


# --- running queues, dispatchers and live views ---------------------------------------

@contextlib.contextmanager
def operator_queue(name: str, url: str | None, partitions: int | None = None,
                   **options: Any) -> Iterator[Queue]:
    """A queue for a one-shot command: gives up on an unreachable Redis within a few seconds;
    ``options`` are further queue options (``serializer`` ...)."""
    quiet_library_logs()
    context = click.get_current_context(silent=True)
    durability = dict(context.meta.get(DURABILITY_META, {})) if context is not None else {}
    wait = durability.get("replica_timeout")
    socket_timeout = (OPERATOR_SOCKET_TIMEOUT if not isinstance(wait, int | float)
                      else max(OPERATOR_SOCKET_TIMEOUT, wait + 1.0))  # outlives the WAIT
    queue: Queue = library_call(lambda: Queue(name, url=url, partitions=partitions,
                                              socket_timeout=socket_timeout,
                                              retry_for=OPERATOR_GIVE_UP,
                                              **durability, **options))
    try:
        yield queue
    except ConnectionFailed as exc:
        reason = exc.__cause__ or exc
        raise OperationFailed(f"cannot reach Redis at {mask_url(queue.config.url)}: "
                              f"{reason}") from exc
    finally:
        queue.close()


def one_time(delay: float | None, at: datetime | float | None) -> None:
    """Refuse ``--delay`` together with ``--at``."""
    if delay is not None and at is not None:
        raise click.UsageError("give either --delay or --at, not both")


async def serve_dispatcher(config: QueueConfig) -> int:
    """Run a dispatcher until SIGINT/SIGTERM; returns how many jobs it promoted."""
    dispatcher = Dispatcher(config)
    task = asyncio.ensure_future(dispatcher.run())
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        dispatcher.stop()
        if signals == 1:  # a loop stuck retrying an unreachable Redis is cancelled after a grace
            log.info("stopping")
            loop.call_later(DISPATCH_STOP_GRACE, task.cancel)
        else:
            task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        with contextlib.suppress(Exception):
            await dispatcher.close()
    return dispatcher.promoted


def watch_stats(queue: Queue, interval: float, as_json: bool) -> None:
    """Refresh the stats table every ``interval`` seconds until Ctrl-C."""
    live = sys.stdout.isatty() and not as_json
    first = True
    while True:
        try:
            stats = queue.stats()
            body = stats_json(stats) if as_json else stats_text(stats)
        except ConnectionFailed as exc:
            if first:
                raise
            body = f"redis unreachable ({exc}); retrying"
        first = False
        if live:
            click.clear()
            stamp = time.strftime("%H:%M:%S")
            click.echo(f"queue {queue.name} at {mask_url(queue.config.url)}  {stamp}  "
                       f"(every {interval:g}s, Ctrl-C to stop)\n")
        elif not as_json:  # a log or a pipe: each table says when it was read (JSON has "now")
            click.echo(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} queue {queue.name}")
        click.echo(body + ("" if as_json or live else "\n"))
        time.sleep(interval)


# --- running a command with exit codes -----------------------------------------------------

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
    debug = _debug()
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
