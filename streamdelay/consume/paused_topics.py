"""A worker's view of the paused topics (docs/operations.md#pause-and-resume): read when it
starts and every ``REFRESH_S`` seconds after, into the routes of its consumer core; entries of
a paused topic that a read already in flight returns go back through the core's sort and
hand-back (``settle_calls.hand_back``: ``releaseJobs``, not an attempt). The plans are
``consume/core/taking.py``'s."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..base.errors import StreamdelayError
from ..io.runner import RETRYABLE, call_with_retry
from ..protocol.fleet_records import WorkerCommand, command_read, parse_command
from ..protocol.plan import Commands
from . import abort_watch as control
from . import upkeep_loops as upkeep
from .core.constants import REFRESH_S, START_PATIENCE
from .core.taking import events_command, parse_events, parse_paused, paused_command

if TYPE_CHECKING:
    from .upkeep_host import ReadingHost as Worker

log = logging.getLogger("streamdelay.worker")


async def refresh(worker: Worker) -> None:
    """Read the paused topics into ``worker.views``, the events switch, this worker's
    command (quiet or stop: docs/operations.md#quiet-and-stop) and the aborts of the
    partitions where it runs jobs (docs/worker.md#abort), in one round trip."""
    name = worker.config.name
    parts, reads = control.abort_reads(worker)  # only where it holds deliveries
    paused, events, command, *aborts = await worker.call(Commands((
        paused_command(name), events_command(name), command_read(name, worker.consumer),
        *reads)), "paused")
    _apply(worker, paused)
    worker.views.set_events(parse_events(events))
    obey(worker, parse_command(command, worker.fleet_started_ms))
    control.apply_aborts(worker, parts, aborts)


def obey(worker: Worker, command: WorkerCommand | None) -> None:
    """Quiet (every topic held paused, the fleet entry renewed at once with state ``quiet``)
    or begin the graceful stop, as an operator asked (``Queue.quiet_worker``/``stop_worker``)."""
    if command == "stop" and not worker.stopping:
        log.info("stopping: asked by an operator (stop_worker); finishing running jobs")
        worker.stop()
    elif command == "quiet" and worker.views.set_quiet(frozenset(worker.topics)):
        log.info("quiet: asked by an operator (quiet_worker); taking no new jobs, finishing "
                 "%d running", len(worker.inflight))
        worker.spawn(upkeep.say_state(worker))


async def load(worker: Worker) -> None:
    """The first read, before the worker reads any job: retried for up to ``START_PATIENCE``
    seconds, so a paused topic stays paused across restarts (then the watch takes over)."""
    try:
        _apply(worker, await call_with_retry(worker.client, paused_command(worker.config.name),
                                             START_PATIENCE, "reading the paused topics"))
    except StreamdelayError as exc:
        log.warning("could not read the paused topics (%s); the watch retries every %gs",
                    exc, REFRESH_S)


def _apply(worker: Worker, reply: Any) -> None:
    paused = parse_paused(reply)
    if worker.views.set_paused(paused):
        log.info("paused topics: %s", ", ".join(sorted(paused)) or "none")


async def watch(worker: Worker) -> None:
    """Re-read the paused topics (and the aborts) every ``REFRESH_S`` until the worker stops,
    writing the checkpoints its handlers kept meanwhile."""
    while not worker.stopping:
        try:
            await refresh(worker)
            await control.flush_checkpoints(worker)  # docs/worker.md#checkpoints
        except RETRYABLE as exc:  # the read loops ride the outage out too
            log.debug("could not read the paused topics (%s)", exc)
        await asyncio.sleep(REFRESH_S)
