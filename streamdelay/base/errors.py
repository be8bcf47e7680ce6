"""One error tree for streamdelay: every failure a caller can see is a ``StreamdelayError``."""

from __future__ import annotations

from collections.abc import Callable

from .masking import mask_text


class StreamdelayError(Exception):
    """Root of every error raised by streamdelay.

    Carries optional context so logs and the CLI can say which job, topic or script was involved.
    The message goes through ``masking.mask_text``: no URL password or ``password=``-like value
    survives in ``str(exc)`` (see docs/security.md).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        job_id: str | None = None,
        topic: str | None = None,
        script: str | None = None,
    ) -> None:
        super().__init__(mask_text(message))
        self.field = field
        self.job_id = job_id
        self.topic = topic
        self.script = script


class ValidationError(StreamdelayError, ValueError):
    """A caller passed a value that is not allowed; ``field`` names the argument."""


class BodyEncodeError(ValidationError):
    """A job body cannot be encoded by the queue's codec, or is larger than the size limit."""


class BodyDecodeError(StreamdelayError):
    """A delivered body does not decode, or does not match the handler's ``body=`` type."""


class ConfigError(StreamdelayError):
    """The queue, worker or Redis setup is not usable (bad URL, old Redis, group clash ...)."""


class ConnectionFailed(StreamdelayError):
    """Redis could not be reached (after the retry policy gave up)."""


class ScriptError(StreamdelayError):
    """A Lua script answered with an error streamdelay does not know."""


class JobNotFound(StreamdelayError):
    """A command named a job id that does not exist: the CLI's ``get``, ``cancel``,
    ``reschedule`` and ``dead`` commands raise it (exit 1). The Python API answers such a
    lookup without an exception: ``get`` returns None, ``cancel``/``reschedule`` return False.
    """


class NoSuchQueue(StreamdelayError):
    """A read or operator command named a queue no producer or worker has used on this Redis."""


class GroupNotFound(StreamdelayError):
    """An operation named a consumer group that does not exist on the topic."""


def _at_in_past(script: str, detail: str, message: str) -> StreamdelayError:
    return ValidationError(
        f"at: due time of job {detail!r} is further in the past than the allowed tolerance",
        field="at",
        job_id=detail,
        script=script,
    )


def _no_group(script: str, detail: str, message: str) -> StreamdelayError:
    return GroupNotFound(f"group: no such consumer group on topic {detail!r}", topic=detail)


def _group_taken(script: str, detail: str, message: str) -> StreamdelayError:
    topic, _, other = detail.partition(" ")
    return ConfigError(
        f"group: topic {topic!r} is already served by group {other!r}; one group per topic "
        f"(see docs/concepts.md)",
        field="group",
        topic=topic,
    )


def _wrong_type(script: str, detail: str, message: str) -> StreamdelayError:
    key, _, rest = detail.partition(" ")  # detail: "<key> <type> script: ..."
    return ScriptError(
        f"redis: key {key} holds a {rest.split(' ', 1)[0]} written by another client, not what "
        f"streamdelay keeps there (see docs/keys.md); nothing was written", script=script)


def _unknown(script: str, detail: str, message: str) -> StreamdelayError:
    return ScriptError(f"script {script} failed: {message}", script=script)


# Every error code a script may answer (``SDERR <CODE> <detail>``) and what it becomes: the one
# list; the Lua scripts and the table in docs/keys.md follow it (tests/test_replies.py checks).
SCRIPT_ERRORS: dict[str, Callable[[str, str, str], StreamdelayError]] = {
    "AT_IN_PAST": _at_in_past,  # <id>: an absolute due time too far in the past, nothing written
    "NO_GROUP": _no_group,  # <topic>: the topic's stream or consumer group does not exist
    "GROUP_TAKEN": _group_taken,  # <topic> <group>: the topic belongs to another group
    "BAD_ARGS": _unknown,  # the ARGV do not follow the script's contract (a client bug)
    "WRONG_TYPE": _wrong_type,  # <key> <type> ...: a key holds another type, nothing written
    "PROMOTE_FAILED": _unknown,  # <key> <error>: the first job of a batch could not be moved
}


def error_from_script(script: str, message: str) -> StreamdelayError:
    """Map a Lua error reply (``SDERR <CODE> <detail>``) to the matching exception."""
    text = message.split("SDERR ", 1)[1] if "SDERR " in message else message
    code, _, detail = text.partition(" ")
    return SCRIPT_ERRORS.get(code, _unknown)(script, detail, message)
