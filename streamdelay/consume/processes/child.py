"""A handler process of the process executor: loads the handler table once, then runs one job
per ``RunJob`` frame and answers with ``Done`` or ``Failed`` (docs/worker.md#executors).

Started by ``pool.py`` with the ``spawn`` method (a fresh interpreter: no fork of a worker's
threads and event loop); the table (``table.py``) names each handler by module and name, so loading
it imports the worker's module (as ``__mp_main__`` for a script run directly). Everything else
(reading, heartbeats, acks, limits, metrics) stays in the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import threading
from multiprocessing.connection import Connection
from types import FrameType
from typing import Any

import msgspec

from ...base.control import Snooze
from ...base.errors import Aborted, BodyDecodeError
from ...base.models import Drop, Job, Retry
from ...protocol.codec import Serializer
from ...protocol.result_codec import encode_result
from ..delivery import Handler
from ..error_text import describe_error
from . import wire
from .table import Entry, load_table

PR_SET_PDEATHSIG = 1  # linux/prctl.h
ABORTED_EXIT = 128 + signal.SIGTERM  # the exit code of a child that ended on an abort


def serve_child(conn: Connection, table: list[Entry], serializer: Serializer, max_result_bytes: int,
                aborting: Any, parent_pid: int) -> None:
    """The child's main: load the handlers, say ``Ready`` (or ``LoadFailed``), then run jobs
    until ``Stop`` or the worker's end of the pipe closes."""
    _die_with_parent(parent_pid)
    # Ctrl-C in a terminal signals the whole process group: the worker decides when its
    # children stop. A SIGTERM ends the child only when the worker asked (an abort); one sent
    # to every process at once (systemd's control group) is left to the worker's shutdown.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_term(signum: int, frame: FrameType | None) -> None:
        if aborting.value:
            raise SystemExit(ABORTED_EXIT)  # finally blocks of the handler run

    signal.signal(signal.SIGTERM, on_term)
    try:
        handlers: dict[str, Handler] = load_table(table)
    except BaseException as exc:  # a module that fails to import, a handler gone
        conn.send_bytes(wire.encode(wire.LoadFailed(describe_error(exc))))
        return
    conn.send_bytes(wire.encode(wire.Ready(os.getpid())))
    runner = _Runner(conn, handlers, serializer, max_result_bytes)
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):  # the worker is gone
            return
        message = wire.to_child(data)
        if isinstance(message, wire.Stop):
            return
        answer = runner.run(message)
        with runner.sending:
            conn.send_bytes(answer)


def _die_with_parent(parent_pid: int) -> None:
    """Linux: the kernel kills this child when the worker dies (even by SIGKILL), so a handler
    never runs on beside the redelivery of its job; elsewhere the child exits at its next read."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the worker died before the setting took effect
        os._exit(1)


class _Runner:
    """Runs one job of the table and encodes the answer frame; the jobs' control (checkpoints)."""

    aborted = False  # ``job.aborted`` in a child: an abort ends the child (SIGTERM) instead

    def __init__(self, conn: Connection, handlers: dict[str, Handler], serializer: Serializer,
                 max_result_bytes: int) -> None:
        self.conn = conn
        self.handlers = handlers
        self.serializer: Serializer = serializer
        self.max_result_bytes = max_result_bytes
        self.sending = threading.Lock()  # progress may be reported from a handler's threads
        self.loop: asyncio.AbstractEventLoop | None = None  # for async def handlers, kept

    def progress(self, data: bytes) -> None:
        """``Job.progress``'s sink in a child: a ``Progress`` frame to the worker."""
        with self.sending:
            self.conn.send_bytes(wire.encode(wire.Progress(data)))

    def keep_checkpoint(self, data: bytes) -> None:
        """``Job.checkpoint``'s sink in a child (checked there: at most 64 KiB of JSON): a
        ``Checkpoint`` frame to the worker, which writes it with its next heartbeat."""
        with self.sending:
            self.conn.send_bytes(wire.encode(wire.Checkpoint(data)))

    def run(self, message: wire.RunJob) -> bytes:
        """Run the job's handler; the ``Done`` or ``Failed`` frame."""
        try:
            handler = self.handlers[message.topic]
            body = (msgspec.msgpack.decode(message.body) if handler.body_type is None
                    else msgspec.msgpack.decode(message.body, type=handler.body_type))
            job: Job[Any] = Job(
                id=message.id, topic=message.topic, body=body, due=message.due,
                created=message.created, attempt=message.attempt,
                max_attempts=message.max_attempts, ttr=message.ttr, headers=message.headers,
                entry_id=message.entry_id, partition=message.partition,
                keep_result_ms=message.keep_result_ms, _report=self.progress,
                last_checkpoint=msgspec.msgpack.decode(message.checkpoint), _control=self)
            value = self._call(handler, job)
            if not message.keep_result_ms:
                return wire.encode(wire.Done())
            encoded = encode_result(value, self.serializer, self.max_result_bytes)
            return wire.encode(wire.Done(encoded[1:]))  # without the format letter
        except Exception as exc:  # the handler's failure is data, as in the worker
            return wire.encode(_failure(exc))

    def _call(self, handler: Handler, job: Job[Any]) -> Any:
        if not handler.is_async:
            return handler.fn(job)
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        return self.loop.run_until_complete(handler.fn(job))  # type: ignore[arg-type]


def _failure(exc: Exception) -> wire.Failed:
    """The ``Failed`` frame of an exception: control exceptions by kind, others by text."""
    if isinstance(exc, Retry):
        return wire.Failed("retry", str(exc), exc.delay)
    if isinstance(exc, Drop):
        return wire.Failed("drop", str(exc))
    if isinstance(exc, Snooze):
        return wire.Failed("snooze", str(exc), exc.delay)
    if isinstance(exc, Aborted):
        return wire.Failed("aborted", str(exc))
    if isinstance(exc, BodyDecodeError):
        return wire.Failed("body", describe_error(exc))
    return wire.Failed("error", describe_error(exc))
