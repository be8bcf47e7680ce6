"""The outbox hand-over of workflows across partitions (docs/workflows.md#across-partitions).

A script that records a job's end writes one outbox entry per waiter of another partition
(``PREFIX outbox``, in the parent's slot). A dispatcher reads its partition's outbox, applies
each entry on the waiter's partition with ``forwardOutcomes`` (idempotent: an outcome already
applied changes nothing) and only then drops the entries (``dropOutbox``). A dispatcher killed
in between leaves the entries, and the next read forwards them again: never lost, never
applied twice. No script touches two slots.
"""

from __future__ import annotations

from typing import Any

from ..protocol import streams
from ..protocol.event_entries import read_entries
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command, Plan
from ..protocol.scripts import Arg, ScriptCall, script

FORWARD_BATCH = 100  # outbox entries per read (each a small triple)


def outbox_key(keys: PartitionKeys) -> str:
    """The partition's outbox stream."""
    return keys.prefix + "outbox"


def read_outbox_command(keys: PartitionKeys, block_ms: int | None) -> Command:
    """Read the oldest outbox entries (blocking up to ``block_ms`` while it is empty): the
    stream is read from its start, since an entry leaves it only once forwarded."""
    return streams.read([outbox_key(keys)], ["0-0"], FORWARD_BATCH, block_ms)


def forward_plan(keys: PartitionKeys, partitions: int, reply: Any) -> Plan[int]:
    """Forward the entries of an outbox read (``reply``); how many changed a waiter."""
    entries = read_entries(reply).get(outbox_key(keys), [])
    if not entries:
        return 0
    by_partition: dict[int, list[Arg]] = {}
    for _, fields in entries:
        target = int(fields.get("p", "-1"))
        if 0 <= target < partitions:
            by_partition.setdefault(target, []).extend(
                (fields.get("r", ""), fields.get("f", ""), fields.get("o", "")))
    calls: list[ScriptCall] = [
        script("forwardOutcomes").call(PartitionKeys(keys.queue, target).script_keys(), args)
        for target, args in sorted(by_partition.items())]
    changed = 0
    if calls:
        replies = yield calls if len(calls) > 1 else calls[0]
        changed = sum(int(r) for r in (replies if len(calls) > 1 else [replies]))
    yield script("dropOutbox").call(keys.script_keys(), [eid for eid, _ in entries])
    return changed
