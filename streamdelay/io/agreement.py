"""Run the partition-count agreement (``protocol.partitions``) once per process, URL and queue
(and lifecycle events setting: docs/events.md#the-switch)."""

from __future__ import annotations

from ..protocol.partitions import Retention, partition_check_plan
from .clients import AsyncClient, SyncClient
from .runner import drive_async, drive_sync

# (url, queue, partitions, events bound) checked in this process
_agreed: set[tuple[str, str, int, int | None, Retention]] = set()


def agree_partitions_sync(
    client: SyncClient, url: str, queue: str, partitions: int, give_up_after: float | None,
    create: bool = True, events: int | None = None, retention: Retention = (None, None),
) -> None:
    """Run the partition check once per process for this URL and queue (blocking)."""
    if (url, queue, partitions, events, retention) not in _agreed:
        plan = partition_check_plan(queue, partitions, create, events, retention)
        drive_sync(client, plan, give_up_after)
        _agreed.add((url, queue, partitions, events, retention))


async def agree_partitions_async(
    client: AsyncClient, url: str, queue: str, partitions: int, give_up_after: float | None,
    create: bool = True, events: int | None = None, retention: Retention = (None, None),
) -> None:
    """Run the partition check once per process for this URL and queue (asyncio)."""
    if (url, queue, partitions, events, retention) not in _agreed:
        plan = partition_check_plan(queue, partitions, create, events, retention)
        await drive_async(client, plan, give_up_after)
        _agreed.add((url, queue, partitions, events, retention))
