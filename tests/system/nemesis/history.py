"""The nemesis run's history (docs/reliability.md#histories): what every process did, as records
written one JSON object a line to ``<directory>/<process>.jsonl``, and read back for the checker.

Recording: each process makes one ``Recorder(directory, name)`` (names unique among live
processes; a process restarted under the same name appends and goes on numbering):

- ``seq = rec.invoke(kind, job, **fields)`` before an operation (``enqueue``, ``cancel``,
  ``reschedule``, ``result_wait``, ...), then ``rec.complete(seq, "ok" | "fail" | "unknown",
  **fields)``: ``ok`` with what it answered (``due_ms=``, ``created=``, ``cancelled=``,
  ``found=``), ``fail`` when it was refused (nothing written), ``unknown`` when it may or may
  not have happened (a timeout, a lost connection). The completion has the invoke's ``seq``,
  ``kind`` and ``job``. An invoke never completed (the process was killed) counts as unknown.
- ``rec.note(kind, job, **fields)`` for what is not an operation: a handler's ``start`` and
  ``end`` (``attempt=``, ``worker=``, ``outcome="ok" | "fail" | "dead"``, ``value=``; on a start
  ``due_ms=job.due`` and ``ready_ms=`` the ms of ``job.entry_id``, see checker.py), a
  nemesis ``fault`` (``phase="begin" | "end"``, ``name=``, ``target=``, ``hosts=``: see
  timeline.py), ``result`` and ``callback`` notes, a ``final_state`` (``state=``) read back
  at the end.

Durability: each record is one ``os.write`` of one whole line on an ``O_APPEND`` descriptor,
with no buffer in the process, so a ``kill -9`` (or a partition, or a frozen process) loses no
record already written; a kill in the middle of a write leaves at most a torn last line, which
``load`` skips.

One clock: ``now_ms()`` is ``time.time()`` in ms. Every process of the run (producers, workers,
nemesis, redis-server) runs on this one machine, and Redis ``TIME`` (the server clock the due
times are computed on) reads the same system clock, so a record's ``time_ms`` and a due time
returned by Redis compare directly (to 1 ms, the granularity of a due time).

The checker (``check``, ``Allowances``, ``Violation``, ``format_report``) lives in checker.py and
is re-exported here: import everything from ``tests.system.nemesis.history``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Allowances",
    "Record",
    "Recorder",
    "Violation",
    "check",
    "format_report",
    "load",
    "now_ms",
]

PHASES = ("ok", "fail", "unknown")


def now_ms() -> float:
    """The run's one clock, in ms since the epoch: ``time.time() * 1000`` (the same system
    clock as Redis ``TIME`` on this machine, see the module docstring)."""
    return time.time() * 1000.0


@dataclass(frozen=True)
class Record:
    """One line of a history file.

    ``seq`` numbers a process's operations and notes (an invoke and its completion share
    it); ``phase`` is ``"invoke"``, ``"ok"``, ``"fail"``, ``"unknown"`` for operations, and
    whatever the note gave (``"begin"``/``"end"`` for faults) or None for notes."""

    process: str
    seq: int
    kind: str
    phase: str | None
    job: str | None
    time_ms: float
    fields: dict[str, Any]

    def to_line(self) -> bytes:
        """The record as one JSON line (non-JSON values written as their ``str``)."""
        data = {"process": self.process, "seq": self.seq, "kind": self.kind,
                "phase": self.phase, "job": self.job, "time_ms": self.time_ms,
                "fields": self.fields}
        return (json.dumps(data, separators=(",", ":"), default=str) + "\n").encode()

    @classmethod
    def from_line(cls, line: str) -> Record:
        """Parse one line written by ``to_line`` (``ValueError`` when it is not one)."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not a record")
        return cls(process=str(data["process"]), seq=int(data["seq"]), kind=str(data["kind"]),
                   phase=data.get("phase"), job=data.get("job"),
                   time_ms=float(data["time_ms"]), fields=dict(data.get("fields") or {}))


class Recorder:
    """Append one process's records to ``directory/<process>.jsonl`` (thread-safe)."""

    def __init__(self, directory: Path, process: str) -> None:
        """Open (or create) the process's file; a restarted process continues its numbering."""
        directory.mkdir(parents=True, exist_ok=True)
        self.process = process
        self.path = directory / f"{process}.jsonl"
        self._lock = threading.Lock()
        self._open: dict[int, tuple[str, str | None]] = {}  # invoked, not completed
        self._seq = 1 + max((r.seq for r in _read_file(self.path)), default=-1)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size and not self.path.read_bytes().endswith(b"\n"):
            self._write(b"\n")  # the last run was killed mid-line: never glue onto it

    def invoke(self, kind: str, job: str | None, **fields: Any) -> int:
        """Record an operation invoked; returns its ``seq`` for ``complete``."""
        with self._lock:
            seq = self._next()
            self._open[seq] = (kind, job)
            self._emit(Record(self.process, seq, kind, "invoke", job, now_ms(), fields))
        return seq

    def complete(self, seq: int, phase: Literal["ok", "fail", "unknown"], **fields: Any
                 ) -> None:
        """Record how the operation ``seq`` ended: ``ok``, ``fail`` (did not happen) or
        ``unknown`` (may have happened)."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
        with self._lock:
            if seq not in self._open:
                raise ValueError(f"operation {seq} was not invoked or is already complete")
            kind, job = self._open.pop(seq)
            self._emit(Record(self.process, seq, kind, phase, job, now_ms(), fields))

    def note(self, kind: str, job: str | None = None, **fields: Any) -> None:
        """Record an event that is not an operation (``phase=`` given goes to the record's
        phase: ``"begin"``/``"end"`` of a fault)."""
        phase = fields.pop("phase", None)
        with self._lock:
            self._emit(Record(self.process, self._next(), kind,
                              None if phase is None else str(phase), job, now_ms(), fields))

    def close(self) -> None:
        """Close the file (records already written stay)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def _next(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _emit(self, record: Record) -> None:
        self._write(record.to_line())

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # a regular file takes it whole; the loop covers a signal mid-write
            view = view[os.write(self._fd, view):]


def _read_file(path: Path) -> list[Record]:
    """A file's records, lines that do not parse skipped (a torn line of a killed writer)."""
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            records.append(Record.from_line(line))
        except (ValueError, KeyError, TypeError):
            continue  # torn by a kill -9 mid-write (only ever a file's last line of a run)
    return records


def _order(record: Record) -> tuple[float, str, int, int]:
    return (record.time_ms, record.process, record.seq, 0 if record.phase == "invoke" else 1)


def load(directory: Path) -> list[Record]:
    """Every record of every ``*.jsonl`` history file in ``directory``, in time order (torn
    lines skipped; other ``.jsonl`` files there whose lines are not records are ignored)."""
    records = [r for path in sorted(directory.glob("*.jsonl")) for r in _read_file(path)]
    return sorted(records, key=_order)


from tests.system.nemesis.checker import (  # noqa: E402  (re-exported: it needs Record above)
    Allowances,
    Violation,
    check,
    format_report,
)
