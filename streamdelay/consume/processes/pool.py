"""The process executor's parent side: ``processes`` children started once, one job at a time
each, replaced when they die or after ``max_jobs_per_child`` jobs (docs/worker.md#executors).

A child is spawned (``multiprocessing``'s ``spawn`` method), linked by a duplex pipe
(``multiprocessing.connection``) that carries msgspec frames (``wire.py``). The event loop reads
each child's pipe as frames arrive (``add_reader``); an end of file means the child died, and
the process's sentinel gives its exit code. So a child killed by a signal (``kill -9``, the OOM
killer, a segfault) or ending with ``os._exit`` fails only the job it ran, with an error naming
the signal or the exit code, and a new child takes its place.

The limits are the worker's, enforced here by signals: at ``handler_timeout`` the child is
killed (SIGKILL) and replaced (one watchdog timer for the pool, at the soonest deadline: no timer
per job); an abort sends SIGTERM, then SIGKILL after ``abort_grace``; a handler still running
when the shutdown cancels it is killed before its job is handed back. A child never runs a job
beside its redelivery.

A child's answer is handled in the pipe's reader callback, which gives the child its next job
there and then (a job waiting for a child waits in the pool's queue, not in a task): the child
does not wait for the loop to wake the job's task, nor for a read from Redis.
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
from collections import deque
from collections.abc import Mapping
from typing import Any

from ...base.errors import Aborted, ConfigError
from ...base.models import Job
from ...protocol.codec import Serializer
from ..delivery import Delivery, Handler
from . import wire
from .child import serve_child
from .child_link import DEATH_WAIT, ChildLink, PoolRun, watch_child
from .child_outcomes import ChildDied, outcome
from .executor_settings import ProcessSettings
from .table import handler_table

log = logging.getLogger("streamdelay.worker")
START_TIMEOUT = 60.0  # seconds for the first children to import the worker's module
STOP_WAIT = 3.0  # seconds the children get to exit at the pool's close
RESPAWN_PAUSE = 1.0  # seconds between two tries after a child could not load the handlers


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
        self._children: set[ChildLink] = set()
        self._idle: deque[ChildLink] = deque()  # ready, no job
        self._waiting: deque[PoolRun] = deque()  # jobs no child took yet, in order
        self._runs: dict[tuple[int, str, str], PoolRun] = {}  # by delivery key
        self._watchdog: asyncio.TimerHandle | None = None  # at the soonest hard limit
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
            self._free(child)
        log.info("process executor: %d handler process(es) started: pids %s",
                 len(children), " ".join(str(c.pid) for c in children))

    def _spawn(self) -> ChildLink:
        loop = asyncio.get_running_loop()
        ours, theirs = self._context.Pipe(duplex=True)
        aborting = self._context.RawValue("b", 0)
        process = self._context.Process(
            target=serve_child, name="streamdelay-handler", daemon=False,
            args=(theirs, self._table, self.serializer, self.max_result_bytes, aborting,
                  os.getpid()))
        process.start()
        theirs.close()  # the child holds its end: its death is an end of file here
        child = ChildLink(process, ours, aborting, loop)
        child.answered = self._answered
        self._children.add(child)
        watch_child(child, loop)
        child.gone.add_done_callback(lambda _: self._ended(child))
        return child

    def _ended(self, child: ChildLink) -> None:
        """A child is gone: forget it and start another (unless the pool closes)."""
        self._children.discard(child)
        if self._closing or child.retired:
            return
        if not child.ready.done() or child.ready.exception() is not None:
            return  # it never took a job: start() fails, or _replace tries again after a pause
        if child.run is None and not child.doomed:
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
                self._free(child)
                return
            log.error("%s; trying again in %gs", ready.exception(), RESPAWN_PAUSE)
            child.retired = True  # its exit starts no second replacement
            asyncio.get_running_loop().call_later(RESPAWN_PAUSE, self._replace_unless_closing)

        child.ready.add_done_callback(loaded)

    def _replace_unless_closing(self) -> None:
        if not self._closing:
            self._replace()

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
        if delivery.aborted:  # before it reached the pool: never started
            raise Aborted(f"job {job.id!r} was aborted", job_id=job.id, topic=job.topic)
        run = PoolRun(frame, delivery, asyncio.get_running_loop().create_future(), timeout)
        self._runs[delivery.key] = run
        self._give(run)
        try:
            answer = await run.reply
        except asyncio.CancelledError:
            if run.child is not None:  # its job is handed back next: never run beside a
                run.child.doomed = True  # redelivery
                run.child.kill()
            raise
        except ChildDied:
            child = run.child
            if child is not None and child.timed_out:
                raise asyncio.TimeoutError(f"handler ran longer than {timeout:g}s") from None
            if child is not None and child.aborted:  # its job is gone, cancelled: the
                raise Aborted(f"job {job.id!r} was aborted", job_id=job.id,  # settle finds
                              topic=job.topic) from None  # it stale
            raise
        finally:
            if self._runs.get(delivery.key) is run:
                del self._runs[delivery.key]
        return outcome(answer)

    def _give(self, run: PoolRun) -> None:
        """Start ``run`` in an idle child, or queue it for the next child that is free."""
        while self._idle:
            child = self._idle.popleft()
            if child.alive:
                self._start(child, run)
                return
        self._waiting.append(run)

    def _start(self, child: ChildLink, run: PoolRun) -> None:
        child.run, run.child = run, child
        with contextlib.suppress(OSError):  # died since it was idle: its exit fails the reply
            child.conn.send_bytes(run.frame)
        if run.timeout is not None:
            child.deadline = deadline = asyncio.get_running_loop().time() + run.timeout
            if self._watchdog is None or deadline < self._watchdog.when():
                self._arm(deadline)

    def _free(self, child: ChildLink) -> None:
        """``child`` takes no job now: give it the next waiting one, or make it idle."""
        while self._waiting:
            run = self._waiting.popleft()
            if not run.reply.done():  # not cancelled nor aborted while it waited
                self._start(child, run)
                return
        self._idle.append(child)

    def _answered(self, child: ChildLink, message: Any) -> None:
        """A child's ``Done`` or ``Failed``: the job's answer; the child's next job at once, or
        its retirement after its last job (or after an abort it outlived: its SIGKILL is on its
        way)."""
        run, child.run, child.deadline = child.run, None, None
        if run is not None and not run.reply.done():
            run.reply.set_result(message)
        child.jobs += 1
        if child.doomed or child.gone.done() or self._closing:
            return
        limit = self.settings.max_jobs_per_child
        if not child.aborted and (limit is None or child.jobs < limit):
            self._free(child)
            return
        child.retired = True
        with contextlib.suppress(OSError):
            child.conn.send_bytes(wire.encode(wire.Stop()))
        self._replace()

    def _arm(self, when: float) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._watchdog = asyncio.get_running_loop().call_at(when, self._expire)

    def _expire(self) -> None:
        """The watchdog: kill the children past their job's hard limit; wait for the next."""
        self._watchdog = None
        loop = asyncio.get_running_loop()
        now, soonest = loop.time(), None
        for child in self._children:
            if child.deadline is None:
                continue
            if child.deadline <= now:
                child.deadline, child.timed_out, child.doomed = None, True, True
                child.kill()
                if child.run is not None:  # bounded, as every wait for a child's exit
                    loop.call_later(DEATH_WAIT, self._overdue, child, child.run)
            elif soonest is None or child.deadline < soonest:
                soonest = child.deadline
        if soonest is not None:
            self._arm(soonest)

    @staticmethod
    def _overdue(child: ChildLink, run: PoolRun) -> None:
        """A child killed at its limit was not reaped within ``DEATH_WAIT``: its job fails."""
        if not run.reply.done():
            run.reply.set_exception(ChildDied(child.pid, None))

    def _abort_hook(self, delivery: Delivery) -> None:
        """``Delivery.on_abort`` of the deliveries run here."""
        self.abort(delivery.key)

    def abort(self, key: tuple[int, str, str]) -> bool:
        """Stop the handler of the delivery ``key`` (partition, topic, entry id): SIGTERM to its
        child (the handler sees ``SystemExit``, its ``finally`` blocks run), SIGKILL after
        ``abort_grace`` seconds; a job still waiting for a child never starts. False when the
        pool does not hold it."""
        run = self._runs.get(key)
        if run is None or run.reply.done():
            return False
        child = run.child
        if child is None:  # waiting for a child: it never starts
            job_id = run.delivery.job_id
            run.reply.set_exception(Aborted(f"job {job_id!r} was aborted", job_id=job_id,
                                            topic=run.delivery.topic))
            return True
        if child.gone.done():
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
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        children = [c for c in self._children if not c.gone.done()]
        for child in children:
            if child.run is not None:
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
