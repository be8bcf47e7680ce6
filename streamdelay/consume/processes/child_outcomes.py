"""What a child's answer means in the worker: the handler's value, or its exception raised
again (a control exception by kind, any other as its text), and ``ChildDied`` for a child that
ended while it ran a job (docs/worker.md#executors).
"""

from __future__ import annotations

import signal
from typing import Any

import msgspec

from ...base.control import Snooze
from ...base.errors import Aborted, BodyDecodeError
from ...base.models import Drop, Retry
from . import wire


class ChildDied(Exception):
    """The handler's child process ended while it ran the job (the job's attempt fails)."""

    def __init__(self, pid: int, exitcode: int | None) -> None:
        self.pid, self.exitcode = pid, exitcode
        if exitcode is not None and exitcode < 0:
            try:
                name = signal.Signals(-exitcode).name
            except ValueError:
                name = f"signal {-exitcode}"
            how = f"was killed by {name} (signal {-exitcode})"
        else:
            how = f"exited with code {exitcode}" if exitcode is not None else "vanished"
        super().__init__(f"the handler's process (pid {pid}) {how} while it ran the job")
        self.error_text = f"ChildDied: {self}"  # no frames: the worker's are not the cause


class ChildError(Exception):
    """A handler's exception raised in a child: its text as the child wrote it."""

    def __init__(self, text: str) -> None:
        super().__init__(text.partition("\n")[0])
        self.error_text = text


class ChildBodyError(BodyDecodeError):
    """A ``BodyDecodeError`` raised in a child: the job goes dead, as in a thread."""

    def __init__(self, text: str) -> None:
        super().__init__(text.partition("\n")[0])
        self.error_text = text


def outcome(answer: Any) -> Any:
    """The handler's return value, or its exception raised again in the worker."""
    if isinstance(answer, wire.Done):
        return None if answer.result is None else msgspec.Raw(answer.result)
    if answer.kind == "retry":
        raise Retry(answer.delay, answer.error)
    if answer.kind == "drop":
        raise Drop(answer.error)
    if answer.kind == "snooze":
        raise Snooze(answer.delay)
    if answer.kind == "aborted":
        raise Aborted(answer.error)
    if answer.kind == "body":
        raise ChildBodyError(answer.error)
    raise ChildError(answer.error)
