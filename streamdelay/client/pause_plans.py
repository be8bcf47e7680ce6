"""Pausing and resuming topics (docs/operations.md#pause-and-resume).

The paused topics of a queue live in one Redis hash, partition 0's ``paused`` key (topic ->
since when, epoch ms), written by ``setPaused``. Workers read it when they start and every
``REFRESH_S`` seconds after (``consume/core/constants.py``), so a pause reaches every worker
within a
second with no round trip per job: their read loops leave paused topics out of XREADGROUP,
and an entry of a paused topic that a read already in flight returns is handed back at once
(``releaseJobs``: to the tail of its stream, not counted as an attempt). Dispatchers are not
affected: due jobs still move into their streams, so ``stats`` shows them ready, with a growing
lag.
"""

from __future__ import annotations

from typing import Any

from ..base import validation
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import field_map
from ..protocol.scripts import script


def paused_key(queue: str) -> str:
    """The key of a queue's paused topics (partition 0's hash tag)."""
    return PartitionKeys(queue, 0).paused


def set_paused_plan(cfg: QueueSpec, topic: str, paused: bool) -> Plan[bool]:
    """Pause (or resume) ``topic``; True when this call changed its state. Durable: under
    ``replicas=`` it waits for the replicas like a cancel, so a failover cannot un-pause a
    topic (docs/guarantees.md#durability-across-failover)."""
    name = validation.topic(topic)
    reply = yield script("setPaused").call([paused_key(cfg.name)], [name, 1 if paused else 0],
                                           durable=True)
    return bool(int(reply))


def parse_paused(reply: Any) -> dict[str, int]:
    """An HGETALL reply of the paused hash (a dict or a flat list) as topic -> since (ms)."""
    return {topic: int(since) for topic, since in field_map(reply).items()}


def paused_plan(cfg: QueueSpec) -> Plan[dict[str, int]]:
    """The paused topics of the queue: topic -> paused since (epoch ms, server clock)."""
    return parse_paused((yield Command(("HGETALL", paused_key(cfg.name)))))
