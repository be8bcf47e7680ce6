"""The process executor's link to one child: its process, its pipe, the job it runs
(``ChildLink``, ``PoolRun``), and the reader of its frames on the event loop (``watch_child``).
The pool (``pool.py``) decides which child runs which job; here a frame becomes a delivery's
progress or checkpoint, a ready child, an answer, or, at the end of file, the child's exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import msgspec

from ...base.errors import ConfigError
from ..delivery import Delivery
from . import wire
from .child_outcomes import ChildDied

log = logging.getLogger("streamdelay.worker")
DEATH_WAIT = 5.0  # seconds a killed child gets to be reaped before its job is settled


class PoolRun:
    """One job given to the pool: its frame, its delivery, the child's answer (a future of the
    loop) and its hard limit; ``child`` runs it (None while it waits for one)."""

    __slots__ = ("child", "delivery", "frame", "reply", "timeout")

    def __init__(
        self, frame: bytes, delivery: Delivery, reply: asyncio.Future[Any], timeout: float | None
    ) -> None:
        self.frame, self.delivery, self.reply, self.timeout = frame, delivery, reply, timeout
        self.child: ChildLink | None = None


class ChildLink:
    """One handler process, its pipe and the job it runs (event loop side)."""

    def __init__(
        self,
        process: multiprocessing.process.BaseProcess,
        conn: Connection,
        aborting: Any,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.process, self.conn, self.aborting = process, conn, aborting
        self.pid = process.pid or 0
        self.ready: asyncio.Future[None] = loop.create_future()
        self.gone: asyncio.Future[int | None] = loop.create_future()
        self.run: PoolRun | None = None
        # the pool's callback for a Done or Failed frame (set by the pool once it is built)
        self.answered: Callable[[ChildLink, Any], None] | None = None
        self.deadline: float | None = None  # loop time of the running job's hard limit
        self.jobs = 0
        self.retired = False  # told to stop: takes no job
        self.doomed = False  # killed on purpose (a limit, a cancel): takes no job
        self.aborted = False  # killed on purpose for an abort
        self.timed_out = False  # killed on purpose at handler_timeout

    @property
    def delivery(self) -> Delivery | None:
        """The delivery of the job it runs."""
        return None if self.run is None else self.run.delivery

    @property
    def alive(self) -> bool:
        """Able to take a job."""
        return not (self.gone.done() or self.retired or self.doomed)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the child (nothing if it is gone)."""
        if not self.gone.done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def received(self, message: Any) -> None:
        """A frame from the child (read on the event loop)."""
        if isinstance(message, wire.Ready):
            if not self.ready.done():
                self.ready.set_result(None)
        elif isinstance(message, wire.LoadFailed):
            if not self.ready.done():
                self.ready.set_exception(
                    ConfigError(
                        f"executor: a handler process could not load the handlers: {message.error}",
                        field="executor",
                    )
                )
        elif self.answered is not None:
            self.answered(self, message)

    def exited(self, exitcode: int | None) -> None:
        """The child's pipe closed and the process was reaped."""
        if self.gone.done():
            return
        self.gone.set_result(exitcode)
        if not self.ready.done():
            self.ready.set_exception(
                ConfigError(
                    f"executor: a handler process exited with code {exitcode} while it started "
                    f"(see its output above)",
                    field="executor",
                )
            )
        if self.run is not None and not self.run.reply.done():
            self.run.reply.set_exception(ChildDied(self.pid, exitcode))


def watch_child(child: ChildLink, loop: asyncio.AbstractEventLoop) -> None:
    """Read the child's frames on the event loop as they arrive (``add_reader``: no thread hop
    per job; a frame is written whole by one ``send_bytes``), progress and checkpoints straight
    to its delivery; at the end of file, wait for the process to exit and report its exit code."""
    fd = child.conn.fileno()

    def readable() -> None:
        try:
            data = child.conn.recv_bytes()
        except (EOFError, OSError):
            loop.remove_reader(fd)
            loop.add_reader(child.process.sentinel, reaped)
            return
        try:
            message = wire.to_parent(data)
        except msgspec.DecodeError:  # not a frame of ours: the child is not to be trusted
            log.error("handler process %d sent an unreadable frame; killing it", child.pid)
            child.kill()
            return
        if isinstance(message, wire.Progress | wire.Checkpoint):
            if child.delivery is None:
                return
            if isinstance(message, wire.Progress):
                child.delivery.report_progress(message.data)
            else:  # docs/worker.md#checkpoints
                child.delivery.keep_checkpoint(message.data)
            return
        child.received(message)

    def reaped() -> None:  # the sentinel: the process has ended (or is about to be reaped)
        loop.remove_reader(child.process.sentinel)
        exited(time.monotonic() + DEATH_WAIT)

    def exited(deadline: float) -> None:
        code = child.process.exitcode  # waitpid(WNOHANG): None while not reaped yet
        if code is None and time.monotonic() < deadline:
            loop.call_later(0.005, exited, deadline)
            return
        if code is None:  # closed its pipe but lingers: not a child we keep
            child.kill()
        child.conn.close()
        child.exited(code)

    loop.add_reader(fd, readable)
