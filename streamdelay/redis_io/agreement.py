"""Run the partition-count agreement (``protocol.partitions``) once per process, URL and queue."""

from __future__ import annotations

from ..protocol.partitions import partition_check_plan
from .runner import drive_async, drive_sync
from .topology import AsyncClient, SyncClient

_agreed: set[tuple[str, str, int]] = set()  # (url, queue, partitions) checked in this process


def agree_partitions_sync(
    client: SyncClient, url: str, queue: str, partitions: int, give_up_after: float | None,
    create: bool = True,
) -> None:
    """Run the partition check once per process for this URL and queue (blocking)."""
    if (url, queue, partitions) not in _agreed:
        drive_sync(client, partition_check_plan(queue, partitions, create), give_up_after)
        _agreed.add((url, queue, partitions))


async def agree_partitions_async(
    client: AsyncClient, url: str, queue: str, partitions: int, give_up_after: float | None,
    create: bool = True,
) -> None:
    """Run the partition check once per process for this URL and queue (asyncio)."""
    if (url, queue, partitions) not in _agreed:
        await drive_async(client, partition_check_plan(queue, partitions, create),
                          give_up_after)
        _agreed.add((url, queue, partitions))
