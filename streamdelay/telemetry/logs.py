"""Log lines of the long-running commands: ``--log-format text|json`` and ``--log-level``.

Only the CLI calls ``service_logging``: importing streamdelay installs no handler, so library
users keep their own ``logging`` setup. Fields come from the standard ``extra=`` mechanism; the
JSON lines are encoded by msgspec. Every line goes through ``masking.scrub`` as a safety net
(docs/operations.md#logs, docs/design.md).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

import msgspec

from ..base.masking import scrub
from .job_logs import JOB_FIELDS

LOG_FORMATS = ("text", "json")
TEXT_LAYOUT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# the attributes every LogRecord has: anything else on a record came from ``extra=``
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message", "asctime", "taskName"}


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra=`` fields of a record: the job fields first, in their fixed order."""
    found = {name: value for name, value in record.__dict__.items() if name not in _STANDARD}
    ordered = {name: found.pop(name) for name in JOB_FIELDS if name in found}
    ordered.update(found)
    return ordered


def _masked(value: Any, secrets: Sequence[str]) -> Any:
    return scrub(value, secrets) if isinstance(value, str) else value


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message key=value ...``, secrets masked."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__(TEXT_LAYOUT)
        self.secrets = secrets

    def format(self, record: logging.LogRecord) -> str:
        """The line (exception text included), with the record's fields appended."""
        line = super().format(record)
        fields = record_fields(record)
        if fields:
            head, newline, rest = line.partition("\n")
            pairs = " ".join(f"{name}={value}" for name, value in fields.items())
            line = f"{head} {pairs}{newline}{rest}"
        return scrub(line, self.secrets)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``event``, the record's fields,
    and ``exception`` (the traceback text) when there is one; every string masked."""

    def __init__(self, secrets: Sequence[str] = ()) -> None:
        super().__init__()
        self.secrets = secrets
        self._encoder = msgspec.json.Encoder(enc_hook=repr)

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        seconds = int(record.created)
        millis = int((record.created - seconds) * 1000)
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": scrub(record.getMessage(), self.secrets),
        }
        for name, value in record_fields(record).items():
            entry.setdefault(name, _masked(value, self.secrets))
        if record.exc_info:
            entry["exception"] = scrub(self.formatException(record.exc_info), self.secrets)
        elif record.exc_text:
            entry["exception"] = scrub(record.exc_text, self.secrets)
        try:
            return self._encoder.encode(entry).decode()
        except (TypeError, ValueError, OverflowError):  # a value msgspec cannot take: as text
            return self._encoder.encode({key: value if isinstance(value, str | int | float)
                                         else repr(value) for key, value in entry.items()}
                                        ).decode()


def service_logging(level: str, fmt: str = "text", secrets: Sequence[str] = ()) -> None:
    """Log on stderr for a long-running command: ``level`` (debug/info/warning/error), ``fmt``
    ``text`` or ``json``, with ``secrets`` (and any URL password) masked on every line."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format: {fmt!r} is not one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(secrets) if fmt == "json" else TextFormatter(secrets))
    logging.basicConfig(level=level.upper(), handlers=[handler])
