"""``Queue.result`` and ``AsyncQueue.result``: read a job's kept result, or wait for it without
polling (docs/results.md#waiting).

A wait is armed by ``protocol.results.wait_step_plan``: one round trip reads the kept result and
whether the job exists, then a ``BLMOVE`` of the job's wake list onto itself blocks until the
settle script pushes the result there (one push wakes every waiter of the job; the list lives a
few seconds, so a waiter arming just after the end still finds it). A block lasts at most
``MAX_WAIT_S`` (the reading client's socket outlives it), then the wait is armed again. A lost
connection (a Redis restart, a failover) arms it again too: the result is read first, so a
waiter never misses an end and never returns anything but what the settle script stored.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..base import validation
from ..base.errors import ConnectionFailed, ResultTimeout
from ..base.models import JobResult
from ..consume.core.reserving import MAX_WAIT_S
from ..io.clients import AsyncClient, SyncClient
from ..io.config import QueueConfig
from ..io.runner import drive_async, drive_sync
from ..io.steps import run_step_async, run_step_sync
from ..protocol.keys import PartitionKeys, partition_of
from ..protocol.plan import Command, Plan
from ..protocol.result_codec import PENDING, parse_result, result_timeout, wait_step_plan

_LOST = (ConnectionFailed, RedisConnectionError, RedisTimeoutError, ConnectionError, OSError)
REARM_PAUSE_S = 0.05  # after a lost connection, before arming again (the runner backs off too)


def _keys(cfg: QueueConfig, job_id: str) -> PartitionKeys:
    return PartitionKeys(cfg.name, partition_of(validation.job_id(job_id), cfg.partitions))


def _timed_out(job_id: str, timeout: float | None) -> ResultTimeout:
    if not timeout:
        return ResultTimeout(f"job {job_id!r} has not ended (pass timeout= to wait for it)",
                             job_id=job_id)
    return ResultTimeout(f"job {job_id!r} did not end within {timeout:g} s", job_id=job_id)


def _gave_up(exc: BaseException) -> ConnectionFailed:
    """A wait whose time ran out while Redis was unreachable: the one connection error."""
    if isinstance(exc, ConnectionFailed):
        return exc
    return ConnectionFailed(f"redis: unreachable while waiting for a result ({exc})")


def _block_s(deadline: float) -> float:
    return max(0.0, min(deadline - time.monotonic(), MAX_WAIT_S))


class SyncResults:
    """``result`` of ``Queue``."""

    config: QueueConfig

    def _reading_client(self) -> SyncClient:
        raise NotImplementedError

    def result(self, id: str, timeout: float | None = None) -> JobResult | None:
        """How job ``id`` ended (``sd.JobResult``), kept for its ``keep_result``; None when the
        queue does not know the id. While it runs: with ``timeout`` seconds, wait for its end
        (woken by the settle script, no polling), else (or when the time runs out) raise
        ``sd.ResultTimeout``."""
        wait_s = result_timeout(timeout)
        cfg, keys = self.config, _keys(self.config, id)
        deadline = time.monotonic() + (wait_s or 0.0)
        while True:
            client = self._reading_client()
            plan = wait_step_plan(keys, id, _block_s(deadline) if wait_s else 0.0)
            try:
                found = _drive_sync(client, plan, cfg, id)
            except _LOST as exc:
                if time.monotonic() >= deadline:
                    raise _gave_up(exc) from exc
                time.sleep(REARM_PAUSE_S)
                continue
            if found is not PENDING:
                return found  # type: ignore[no-any-return]
            if time.monotonic() >= deadline:
                raise _timed_out(id, wait_s)


class AsyncResults:
    """``result`` of ``AsyncQueue``."""

    config: QueueConfig

    def _reading_client(self) -> AsyncClient:
        raise NotImplementedError

    async def result(self, id: str, timeout: float | None = None) -> JobResult | None:
        """How job ``id`` ended, or wait for it; see ``Queue.result``."""
        wait_s = result_timeout(timeout)
        cfg, keys = self.config, _keys(self.config, id)
        deadline = time.monotonic() + (wait_s or 0.0)
        while True:
            client = self._reading_client()
            plan = wait_step_plan(keys, id, _block_s(deadline) if wait_s else 0.0)
            try:
                found = await _drive_async(client, plan, cfg, id)
            except _LOST as exc:
                if time.monotonic() >= deadline:
                    raise _gave_up(exc) from exc
                await asyncio.sleep(REARM_PAUSE_S)
                continue
            if found is not PENDING:
                return found  # type: ignore[no-any-return]
            if time.monotonic() >= deadline:
                raise _timed_out(id, wait_s)


def _drive_sync(client: SyncClient, plan: Plan[Any], cfg: QueueConfig, job_id: str) -> Any:
    """Drive the read through the runner (its retry policy); send the blocking ``BLMOVE``
    once, directly: a lost connection while blocked re-arms the whole wait (read first)."""
    first = drive_sync(client, _until_block(plan), cfg.retry_for)
    if not isinstance(first, Command):
        return first
    woke = run_step_sync(client, first)
    return PENDING if woke is None else parse_result(job_id, woke)


async def _drive_async(client: AsyncClient, plan: Plan[Any], cfg: QueueConfig, job_id: str
                       ) -> Any:
    """``_drive_sync`` on an asyncio client."""
    first = await drive_async(client, _until_block(plan), cfg.retry_for)
    if not isinstance(first, Command):
        return first
    woke = await run_step_async(client, first)
    return PENDING if woke is None else parse_result(job_id, woke)


def _until_block(plan: Plan[Any]) -> Plan[Any]:
    """``plan``'s steps up to its blocking ``BLMOVE``, which is returned (a ``Command``)
    instead of sent; else what ``plan`` returns (never a ``Command``)."""
    step = next(plan)
    while True:
        if isinstance(step, Command) and step.args[0] == "BLMOVE":
            plan.close()
            return step
        try:
            step = plan.send((yield step))
        except StopIteration as end:
            return end.value
