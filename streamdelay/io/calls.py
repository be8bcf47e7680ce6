"""The low-level pieces of sending script calls: the EVALSHA/EVAL arguments, what counts as
connection trouble, and the mapping of error replies to streamdelay errors (shared by
``steps.py``, ``runner.py`` and ``waiting.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from redis.exceptions import (
    AuthenticationError,
    ClusterDownError,
    ClusterError,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)

from ..base.errors import ConfigError, ConnectionFailed, ScriptError
from ..protocol.plan import Command
from ..protocol.script_errors import error_from_command, error_from_script
from ..protocol.scripts import ScriptCall
from ..protocol.streams import reply_options as stream_reply_options

log = logging.getLogger("streamdelay")
# Connection trouble, and what a cluster or a failover answers while it settles (no slot owner,
# a demoted master, "cannot be connected"): every one of them is ridden out by the retry policy.
RETRYABLE = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError,
             ClusterDownError, ClusterError, TryAgainError, ReadOnlyError, RedisClusterException)


def retryable(exc: BaseException) -> bool:
    """Connection trouble worth waiting out; a refused password is not (it will not heal)."""
    return isinstance(exc, RETRYABLE) and not isinstance(exc, AuthenticationError)


def auth_failed(exc: AuthenticationError) -> ConfigError:
    return ConfigError(f"redis: authentication failed: {exc} (check the user and password "
                       f"in the URL)")


def denied(exc: NoPermissionError) -> ConfigError:
    return ConfigError(f"redis: permission denied: {exc} (the ACL a queue needs: "
                       f"docs/security.md)")


def command_error(step: Command, exc: ResponseError) -> Exception:
    """A plain command's error reply as a streamdelay error (retryable ones stay as they are)."""
    if isinstance(exc, NoPermissionError):
        return denied(exc)
    if isinstance(exc, RETRYABLE):
        return exc
    return error_from_command(str(step.args[0]), str(exc))


def map_error(call: ScriptCall, exc: Exception) -> Exception:
    if isinstance(exc, NoPermissionError):
        return denied(exc)
    if isinstance(exc, OutOfMemoryError):  # refused whole: a script that may write ran nothing
        return ScriptError(f"redis is full (OOM, maxmemory reached): {call.script.name} was "
                           f"refused and wrote nothing; free memory or raise maxmemory "
                           f"(docs/operations.md)", script=call.script.name)
    if isinstance(exc, ResponseError) and not isinstance(exc, (NoScriptError, *RETRYABLE)):
        return error_from_script(call.script.name, str(exc))
    return exc


def command(client: Any) -> Callable[..., Any]:
    """redis-py's ``execute_command`` (untyped upstream), typed for our callers."""
    command: Callable[..., Any] = client.execute_command
    return command


def reply_options(step: Command) -> dict[str, Any]:
    """redis-py's parse options for a plain command's reply, where its default differs from
    what the command answers (``protocol/streams.py``: the stream commands are the only such)."""
    return stream_reply_options(step.args)


def send(target: Any, step: Command) -> Any:
    """Send a plan's plain command on a client or a pipeline (its reply parsed by redis-py)."""
    return command(target)(*step.args, **reply_options(step))


def evalsha_args(call: ScriptCall) -> tuple[Any, ...]:
    return ("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)


def eval_args(call: ScriptCall) -> tuple[Any, ...]:
    """EVAL with the source: works even when the script cache was just flushed (and fills it)."""
    return ("EVAL", call.script.source, len(call.keys), *call.keys, *call.args)


def gave_up(exc: Exception) -> ConnectionFailed:
    return ConnectionFailed(f"redis: unreachable ({exc})")


def call_outcomes(calls: list[ScriptCall], replies: list[Any]) -> list[Any]:
    """Each call's reply, or its error as a streamdelay error; connection trouble is raised
    (so the whole step is retried)."""
    for reply in replies:
        if isinstance(reply, RETRYABLE):
            raise reply
    return [map_error(call, reply) if isinstance(reply, Exception) else reply
            for call, reply in zip(calls, replies, strict=True)]


def first_error(outcomes: list[Any]) -> list[Any]:
    """The replies of a ``list`` step; the first call's error is raised."""
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes


def old_server(exc: ResponseError) -> Exception:
    """A script Redis cannot compile: before 7.0 the ``#!lua`` flags line is a syntax error."""
    if "Error compiling script" in str(exc):
        return ConfigError(f"redis: this server cannot load streamdelay's scripts ({exc}); "
                           f"streamdelay needs Redis 7.0 or newer (docs/operations.md)")
    return exc


__all__ = ["RETRYABLE", "auth_failed", "call_outcomes", "command", "command_error", "denied",
           "eval_args", "evalsha_args", "first_error", "gave_up", "map_error", "old_server",
           "retryable", "send"]
