"""The executor settings of a worker: ``executor=``, ``processes=``, ``max_jobs_per_child=``
(docs/worker.md#executors), checked when the ``Worker`` is built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...base import validation
from ...base.errors import ValidationError

EXECUTORS = ("thread", "process")
MAX_PROCESSES = 1024


@dataclass(frozen=True)
class ProcessSettings:
    """A process executor: ``processes`` children, each replaced after ``max_jobs_per_child``
    jobs (None: never)."""

    processes: int
    max_jobs_per_child: int | None = None
    abort_grace: float = 5.0  # seconds between an abort's SIGTERM and its SIGKILL

    @property
    def slots(self) -> int:
        """The jobs the worker holds at once: one running in each child and one waiting to
        start when it ends, so a child never waits for a read from Redis between two jobs
        (docs/worker.md#executors)."""
        return 2 * self.processes

    @property
    def read_batch(self) -> int:
        """The fewest jobs a read brings (``Slots.batch``): a read once as many slots are free
        as there are children, not one read per job; the jobs still waiting keep the children
        busy while it is answered (docs/worker.md#executors)."""
        return self.processes


def executor_settings(executor: Any, processes: Any, max_jobs_per_child: Any,
                      abort_grace: Any = 5.0) -> ProcessSettings | None:
    """Check the three options together; the process executor's settings, or None for the
    thread executor (``async def`` on the event loop, ``def`` in threads: today's behaviour).
    ``abort_grace``: the seconds an aborted handler's child has between SIGTERM and SIGKILL.

    ``processes`` defaults to the machine's cores. Raises ``ValidationError`` (a ``ValueError``)
    naming the field for an unknown executor, ``processes`` not a positive int, or ``processes``
    / ``max_jobs_per_child`` given with the thread executor."""
    if executor not in EXECUTORS:
        hint = " (a fork of a worker's threads and event loop is unsafe: use \"process\", " \
               "whose children are spawned)" if executor == "fork" else ""
        raise ValidationError(f"executor: must be \"thread\" or \"process\", got {executor!r}"
                              f"{hint}", field="executor")
    if executor == "thread":
        for field, value in (("processes", processes),
                             ("max_jobs_per_child", max_jobs_per_child)):
            if value is not None:
                raise ValidationError(f"{field}: only applies to executor=\"process\" (the "
                                      f"executor is \"thread\")", field=field)
        validation.seconds(abort_grace, "abort_grace")
        return None
    count = ((os.cpu_count() or 1) if processes is None
             else validation.positive_int(processes, "processes", MAX_PROCESSES))
    recycle = None if max_jobs_per_child is None else validation.positive_int(
        max_jobs_per_child, "max_jobs_per_child", 1_000_000_000)
    return ProcessSettings(count, recycle, validation.seconds(abort_grace, "abort_grace"))
