"""The process executor's parent side: ``processes`` children started once, one job at a time
each, replaced when they die or after ``max_jobs_per_child`` jobs (docs/worker.md#executors).

A child is spawned (``multiprocessing``'s ``spawn`` method), linked by a duplex pipe
(``multiprocessing.connection``) that carries msgspec frames (``wire.py``). The event loop reads
each child's pipe as frames arrive (``add_reader``); an end of file means the child died, and
the process's sentinel gives its exit code. So a child killed by a signal (``kill -9``, the OOM
killer, a segfault) or ending with ``os._exit`` fails only the job it ran, with an error naming
the signal or the exit code, and a new child takes its place.

The limits are the worker's, enforced here by signals: at ``handler_timeout`` the child is
killed (SIGKILL) and replaced (``time_limits.run_hard_limited``); an abort sends SIGTERM, then
SIGKILL after ``abort_grace``; a handler still running when the shutdown cancels it is killed
before its job is handed back. A child never runs a job beside its redelivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

import msgspec

from ...base.errors import Aborted, ConfigError
from ...base.models import Job
from ...protocol.codec import Serializer
from ..delivery import Delivery, Handler
from ..time_limits import run_hard_limited
from . import wire
from .child import serve_child
from .child_outcomes import ChildDied, outcome
from .executor_settings import ProcessSettings
from .table import handler_table

log = logging.getLogger("streamdelay.worker")
START_TIMEOUT = 60.0  # seconds for the first children to import the worker's module
DEATH_WAIT = 5.0  # seconds a killed child gets to be reaped before its job is settled
STOP_WAIT = 3.0  # seconds the children get to exit at the pool's close
RESPAWN_PAUSE = 1.0  # seconds between two tries after a child could not load the handlers


class _Child:
    """One handler process, its pipe and the job it runs (event loop side)."""

    def __init__(self, process: multiprocessing.process.BaseProcess, conn: Connection,
                 aborting: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.process, self.conn, self.aborting = process, conn, aborting
        self.pid = process.pid or 0
        self.ready: asyncio.Future[None] = loop.create_future()
        self.gone: asyncio.Future[int | None] = loop.create_future()
        self.reply: asyncio.Future[Any] | None = None
        self.delivery: Delivery | None = None
        self.jobs = 0
        self.retired = False  # told to stop: takes no job
        self.aborted = False  # killed on purpose for an abort

    @property
    def alive(self) -> bool:
        """Able to take a job."""
        return not self.gone.done() and not self.retired

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the child (nothing if it is gone)."""
        if not self.gone.done():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def received(self, message: Any) -> None:
        """A frame from the child (the reader thread posts it to the loop)."""
        if isinstance(message, wire.Ready):
            if not self.ready.done():
                self.ready.set_result(None)
        elif isinstance(message, wire.LoadFailed):
            if not self.ready.done():
                self.ready.set_exception(ConfigError(
                    f"executor: a handler process could not load the handlers: "
                    f"{message.error}", field="executor"))
        elif self.reply is not None and not self.reply.done():
            self.reply.set_result(message)

    def exited(self, exitcode: int | None) -> None:
        """The child's pipe closed and the process was reaped."""
        if self.gone.done():
            return
        self.gone.set_result(exitcode)
        if not self.ready.done():
            self.ready.set_exception(ConfigError(
                f"executor: a handler process exited with code {exitcode} while it started "
                f"(see its output above)", field="executor"))
        if self.reply is not None and not self.reply.done():
            self.reply.set_exception(ChildDied(self.pid, exitcode))


def _watch(child: _Child, loop: asyncio.AbstractEventLoop) -> None:
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


class ProcessPool:
    """The children of one serving worker; ``run`` gives a job to an idle one."""

    def __init__(self, handlers: Mapping[str, Handler], settings: ProcessSettings,
                 serializer: Serializer, max_result_bytes: int, abort_grace: float = 5.0
                 ) -> None:
        # by reference: module and name; a child imports the module to load it (table.py)
        self._table = handler_table(handlers)
        self.settings = settings
        self.serializer: Serializer = serializer
        self.max_result_bytes = max_result_bytes
        self.abort_grace = abort_grace
        self._context = multiprocessing.get_context("spawn")
        self._children: set[_Child] = set()
        self._idle: asyncio.Queue[_Child] = asyncio.Queue()
        self._running: dict[tuple[int, str, str], _Child] = {}  # by delivery key
        self._closing = False

    @property
    def pids(self) -> list[int]:
        """The pids of the children alive now (tests, logs)."""
        return sorted(c.pid for c in self._children if not c.gone.done())

    async def start(self) -> None:
        """Start the children and wait until each has loaded the handlers; a child that
        cannot raises ``ConfigError`` (field ``executor``) and the pool is closed."""
        children = [self._spawn() for _ in range(self.settings.processes)]
        try:
            await asyncio.wait_for(asyncio.gather(*(c.ready for c in children)),
                                   START_TIMEOUT)
        except BaseException as exc:
            for child in children:  # every failure retrieved, the first one raised
                if child.ready.done():
                    child.ready.exception()
            self.close()
            if isinstance(exc, asyncio.TimeoutError):
                raise ConfigError(f"executor: the handler processes did not start within "
                                  f"{START_TIMEOUT:g}s", field="executor") from None
            raise
        for child in children:
            self._idle.put_nowait(child)
        log.info("process executor: %d handler process(es) started: pids %s",
                 len(children), " ".join(str(c.pid) for c in children))

    def _spawn(self) -> _Child:
        loop = asyncio.get_running_loop()
        ours, theirs = self._context.Pipe(duplex=True)
        aborting = self._context.RawValue("b", 0)
        process = self._context.Process(
            target=serve_child, name="streamdelay-handler", daemon=False,
            args=(theirs, self._table, self.serializer, self.max_result_bytes, aborting,
                  os.getpid()))
        process.start()
        theirs.close()  # the child holds its end: its death is an end of file here
        child = _Child(process, ours, aborting, loop)
        self._children.add(child)
        _watch(child, loop)
        child.gone.add_done_callback(lambda _: self._ended(child))
        return child

    def _ended(self, child: _Child) -> None:
        """A child is gone: forget it and start another (unless the pool closes)."""
        self._children.discard(child)
        if self._closing or child.retired:
            return
        if not child.ready.done() or child.ready.exception() is not None:
            return  # it never took a job: start() fails, or _replace tries again after a pause
        if child.delivery is None:
            log.warning("handler process %d exited with code %s while idle; starting "
                        "another", child.pid, child.gone.result())
        self._replace()

    def _replace(self) -> None:
        """Start a child and make it idle once it has loaded the handlers."""
        child = self._spawn()

        def loaded(ready: asyncio.Future[None]) -> None:
            if ready.cancelled() or self._closing:
                return
            if ready.exception() is None:
                self._idle.put_nowait(child)
                return
            log.error("%s; trying again in %gs", ready.exception(), RESPAWN_PAUSE)
            child.retired = True  # its exit starts no second replacement
            asyncio.get_running_loop().call_later(RESPAWN_PAUSE, self._replace_unless_closing)

        child.ready.add_done_callback(loaded)

    def _replace_unless_closing(self) -> None:
        if not self._closing:
            self._replace()

    async def _take(self) -> _Child:
        while True:
            child = await self._idle.get()
            if child.alive:
                return child

    async def run(self, job: Job[Any], delivery: Delivery, timeout: float | None) -> Any:
        """Run ``job`` in an idle child (waiting for one while a replacement starts); what the
        handler returned (its encoded result as ``msgspec.Raw``), or its exception.

        ``timeout`` is hard: the child is killed and the run ends with ``TimeoutError``. A
        cancel (the shutdown) kills the child before it is passed on."""
        frame = wire.encode(wire.RunJob(
            job.topic, job.id, wire.encode_body(job.body), job.due, job.created, job.attempt,
            job.max_attempts, job.ttr, job.headers, job.entry_id, job.partition,
            job.keep_result_ms, wire.encode_body(job.last_checkpoint)))
        delivery.on_abort = [self._abort_hook]  # docs/worker.md#abort: the child is stopped
        child = await self._take()
        if delivery.aborted:  # while it waited for a child: never started
            self._idle.put_nowait(child)
            raise Aborted(f"job {job.id!r} was aborted", job_id=job.id, topic=job.topic)
        reply = child.reply = asyncio.get_running_loop().create_future()
        child.delivery = delivery
        self._running[delivery.key] = child
        try:
            with contextlib.suppress(OSError):  # died since it was idle: its exit fails the reply
                child.conn.send_bytes(frame)
            if timeout is None:
                answer = await asyncio.shield(reply)
            else:
                try:
                    answer = await run_hard_limited(reply, timeout, child.kill)
                except (TimeoutError, asyncio.TimeoutError):
                    await asyncio.wait((child.gone,), timeout=DEATH_WAIT)
                    raise
        except asyncio.CancelledError:
            child.kill()  # its job is handed back next: never run beside a redelivery
            raise
        except ChildDied:
            if child.aborted:  # its job is gone, cancelled: the settle finds it stale
                raise Aborted(f"job {job.id!r} was aborted", job_id=job.id,
                              topic=job.topic) from None
            raise
        finally:
            child.delivery = child.reply = None
            self._running.pop(delivery.key, None)
            if reply.done() and not reply.cancelled():
                reply.exception()  # retrieved: a death after a timeout or a cancel is known
        self._done(child)
        return outcome(answer)

    def _done(self, child: _Child) -> None:
        """A child answered: back to the idle ones, or retired after its last job (or after an
        abort it outlived: its SIGKILL is on its way)."""
        child.jobs += 1
        limit = self.settings.max_jobs_per_child
        if not child.aborted and (limit is None or child.jobs < limit):
            self._idle.put_nowait(child)
            return
        child.retired = True
        with contextlib.suppress(OSError):
            child.conn.send_bytes(wire.encode(wire.Stop()))
        self._replace()

    def _abort_hook(self, delivery: Delivery) -> None:
        """``Delivery.on_abort`` of the deliveries run here."""
        self.abort(delivery.key)

    def abort(self, key: tuple[int, str, str]) -> bool:
        """Stop the handler of the delivery ``key`` (partition, topic, entry id): SIGTERM to its
        child (the handler sees ``SystemExit``, its ``finally`` blocks run), SIGKILL after
        ``abort_grace`` seconds. False when no child runs it."""
        child = self._running.get(key)
        if child is None or child.gone.done():
            return False
        child.aborted = True
        child.aborting.value = 1
        child.kill(signal.SIGTERM)
        asyncio.get_running_loop().call_later(self.abort_grace, child.kill)
        return True

    def close(self) -> None:
        """Stop every child: idle ones are told to exit, busy ones killed; those still there
        after ``STOP_WAIT`` seconds are killed (bounded: the worker is shutting down). The
        reader threads reap them."""
        self._closing = True
        children = [c for c in self._children if not c.gone.done()]
        for child in children:
            if child.delivery is not None:
                child.kill()
                continue
            with contextlib.suppress(OSError):
                child.conn.send_bytes(wire.encode(wire.Stop()))
        deadline = time.monotonic() + STOP_WAIT
        waiting = {child.process.sentinel: child for child in children}
        while waiting and (left := deadline - time.monotonic()) > 0:
            for sentinel in multiprocessing.connection.wait(list(waiting), left):
                waiting.pop(sentinel)  # type: ignore[arg-type]
        for child in waiting.values():
            child.kill()
        loop = asyncio.get_running_loop()
        for child in children:  # reaped, their pipes closed: nothing left of this serve
            with contextlib.suppress(OSError, ValueError):
                loop.remove_reader(child.process.sentinel)
                loop.remove_reader(child.conn.fileno())
            child.conn.close()
            child.process.join(1.0)
