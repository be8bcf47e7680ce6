"""What a plan is: a generator that yields steps (script calls, plain commands, pipelines) and
receives their replies. Plans are I/O-free; ``io.runner`` is the only code that sends
their steps (docs/design.md).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from .scripts import ScriptCall

T = TypeVar("T")


@dataclass(frozen=True)
class Command:
    """A plain Redis command inside a plan (reads such as XRANGE)."""

    args: tuple[Any, ...]


@dataclass(frozen=True)
class EachCall:
    """Script calls sent together like a ``list`` step, each with its own outcome: a call's
    error reply comes back in its place (as a ``StreamdelayError``) instead of being raised.
    Connection trouble is still raised (and the whole step retried)."""

    calls: tuple[ScriptCall, ...]


@dataclass(frozen=True)
class Commands:
    """Plain commands sent as one pipeline (one round trip, no transaction): the step's reply
    is the list of their replies, in order; the first error reply is raised. Only reads, or
    writes a plan may repeat (a blocking ``XREADGROUP``), belong in one."""

    commands: tuple[Command, ...]


Step = ScriptCall | Command | list[ScriptCall] | EachCall | Commands
Plan = Generator[Step, Any, T]

__all__ = ["Command", "Commands", "EachCall", "Plan", "Step"]
