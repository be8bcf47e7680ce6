"""The text a handler's error is kept as, with a retried or dead job (docs/reliability.md#dead-
letters): ``Type: message``, then the innermost frames (the handler's own code), then the cause.

Bounded (``ERROR_TEXT_LIMIT`` characters) and read through shorter windows still: a dashboard
list cell, an event's 512 bytes (docs/events.md#kinds), the CLI's first line. So the worker's
own frames in front of the handler's (streamdelay's dispatch, ``concurrent.futures``,
``asyncio``) are left out, the handler's frames that do not fit are the outer ones, and no line
is cut in its middle except a message or a source line longer than its own bound.
"""

from __future__ import annotations

import sysconfig
import traceback
from pathlib import Path

from ..protocol.deliveries import ERROR_TEXT_LIMIT

MESSAGE_CHARS = ERROR_TEXT_LIMIT // 2  # the first line keeps room for frames
LINE_CHARS = 240  # a frame's file line or source line, a cause line
TITLE = "Traceback (most recent call last):\n"

# where the worker's own frames come from: this package, and the standard library that runs
# it (threads, asyncio), but not the third-party packages a handler calls into
_PACKAGE = str(Path(__file__).resolve().parent.parent) + "/"
_PATHS = sysconfig.get_paths()
_STDLIB = tuple({str(Path(_PATHS[k]).resolve()) + "/" for k in ("stdlib", "platstdlib")})
_SITE = tuple({str(Path(_PATHS[k]).resolve()) + "/" for k in ("purelib", "platlib")})


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars - 3] + "..."


def _machinery(filename: str) -> bool:
    """Whether a frame's file is the worker's own (streamdelay or the standard library)."""
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):  # <string>, a frozen module: not ours to drop
        return False
    if path.startswith(_PACKAGE):
        return True
    return path.startswith(_STDLIB) and not path.startswith(_SITE)


def _summary(exc: BaseException) -> str:
    """``Type: message`` (a message that cannot be printed is named so)."""
    try:
        message = str(exc)
    except Exception:  # a broken __str__ must not lose the failure
        message = f"<unprintable {type(exc).__name__} object>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _frame_text(frame: traceback.FrameSummary) -> str:
    head = _cut(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}', LINE_CHARS)
    source = (frame.line or "").strip()
    return f"{head}\n    {_cut(source, LINE_CHARS - 4)}\n" if source else f"{head}\n"


def describe_error(exc: BaseException, limit: int = ERROR_TEXT_LIMIT) -> str:
    """``Type: message``, then the innermost frames of ``exc`` that fit (the worker's own frames
    in front of the handler's left out, the outer ones that do not fit counted), then
    ``Caused by: Type: message`` for a chained exception; at most ``limit`` characters.

    An exception that carries its text already (``error_text``: a handler's exception raised
    again from a handler process, consume/processes/) is kept as it is, within ``limit``."""
    carried = getattr(exc, "error_text", None)
    if isinstance(carried, str):
        return carried[:limit]
    header = _cut(_summary(exc), min(MESSAGE_CHARS, limit)) + "\n"
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    tail = "" if cause is None else _cut("Caused by: " + _summary(cause), LINE_CHARS)
    frames = traceback.extract_tb(exc.__traceback__)
    start = 0
    while start < len(frames) and _machinery(frames[start].filename):
        start += 1
    if start == len(frames):  # nothing but the worker's frames (its own error): keep them
        start = 0
    budget = limit - len(header) - len(TITLE) - len(tail)
    kept: list[str] = []
    for frame in reversed(frames[start:]):  # the innermost first, while they fit
        text = _frame_text(frame)
        left = len(frames) - start - len(kept) - 1
        marker = len(f"  ... {left} outer frames not shown\n") if left else 0
        if len(text) + marker > budget:
            break
        kept.append(text)
        budget -= len(text)
    omitted = len(frames) - start - len(kept)
    body = "".join(reversed(kept))
    if omitted:
        body = f"  ... {omitted} outer frames not shown\n" + body
    text = header + (TITLE + body if kept else "") + tail
    return text.rstrip("\n")[:limit]
