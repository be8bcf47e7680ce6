"""One error tree for streamdelay: every failure a caller can see is a ``StreamdelayError``."""

from __future__ import annotations

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
