"""Plumbing shared by the ``streamdelay`` commands: the exit codes and environment names, the
argument types, the two errors a command raises (``UsageProblem``: exit code 2,
``OperationFailed``: 1), and the queue of a one-shot operator command.

Running a command (exit codes, its one error line) is ``exit_codes.py``; loading a worker
``loading.py``; the loops of the commands that run until stopped ``loops.py``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from ..base.durations import parse_duration
from ..base.errors import ConnectionFailed, StreamdelayError, ValidationError
from ..base.masking import mask_url
from ..client.queue import Queue
from ..protocol.codec import too_deep

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "STREAMDELAY_DEBUG"
URL_ENV = "STREAMDELAY_URL"
PARTITIONS_ENV = "STREAMDELAY_PARTITIONS"
OPERATOR_SOCKET_TIMEOUT = 2.0  # seconds per Redis round trip for operator commands
OPERATOR_GIVE_UP = 3.0  # operator commands stop retrying an unreachable Redis after this
DURABILITY_META = "streamdelay.durability"  # --replicas / --replica-timeout (options.py)


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
        except ValidationError as exc:  # not a duration, or a negative one: the library's words
            self.fail(str(exc).removeprefix("duration: "), param, ctx)


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



def debug_wanted() -> bool:
    """True when ``STREAMDELAY_DEBUG`` asks for tracebacks instead of one-line errors."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


# --- the queue of a one-shot command -------------------------------------------------------

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
