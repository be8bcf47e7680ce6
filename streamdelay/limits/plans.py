"""The plans of limits (docs/limits.md): set or clear a topic's limit, read the limits, and the
take-with-limit call every taker shares (``take_call`` + ``parse_take``: ``takeLimited``).

Limits live in partition 0's hash tag, next to its topic stream, so a take there is one
script; a take on another partition leases in partition 0's slot first
(``engine/leasing.py``, docs/limits.md#more-than-one-partition).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ..base import validation
from ..base.errors import ValidationError
from ..protocol.keys import PartitionKeys
from ..protocol.plan import Command, Plan
from ..protocol.replies import text
from ..protocol.scripts import ScriptCall, script
from ..protocol.spec import QueueSpec
from .rates import TopicLimit, concurrency, parse_rate

# reasons of a take reply
GOT_ALL, RATE, CONCURRENCY, DRAINED = 0, 1, 2, 3


def limits_key(queue: str) -> str:
    """The key of a queue's limits (partition 0's hash tag)."""
    return PartitionKeys(queue, 0).limits


def checked_limit(topic: str, rate: Any, conc: Any) -> tuple[str, TopicLimit]:
    """Validate the arguments of ``limit`` (each wrong one named)."""
    name = validation.topic(topic)
    return name, TopicLimit(None if rate is None else parse_rate(rate),
                            None if conc is None else concurrency(conc))


def limit_call(topic: str, rate: Any, conc: Any, clear: bool) -> None:
    """Check how ``limit`` was called, before its plan runs (both faces call it first).

    ``limit(topic)`` with nothing to set clears the limit, while ``streamdelay limit Q T`` with
    no option shows it: the same call with two meanings. Showing is the meaning kept: the bare
    library call still clears, with a DeprecationWarning, until a later release makes it read
    the limit as the CLI does; clear with ``clear=True`` (what ``--clear`` calls), read with
    ``limits()`` (docs/limits.md#one-call-one-meaning)."""
    nothing = rate is None and conc is None
    if clear and not nothing:
        raise ValidationError("limit: give either clear=True or rate/concurrency, not both",
                              field="clear")
    if nothing and not clear:
        warnings.warn(
            f"limit({topic!r}) with no rate and no concurrency clears the limit; that meaning "
            f"is deprecated: `streamdelay limit QUEUE TOPIC` with no option shows the limit, "
            f"and a later release makes this call do the same. Clear it with "
            f"limit({topic!r}, clear=True); read it with limits().get({topic!r})",
            DeprecationWarning, stacklevel=3)


def set_limit_plan(cfg: QueueSpec, topic: str, rate: Any = None,
                   conc: Any = None) -> Plan[bool]:
    """Set ``topic``'s limit (both None: clear it); True when this call changed it."""
    name, limit = checked_limit(topic, rate, conc)
    # durable: under replicas= a failover cannot drop or undo a limit change
    reply = yield script("setLimit").call([limits_key(cfg.name)], [name, *limit.stored()],
                                          durable=True)
    return bool(int(reply))


def parse_limits(reply: Any) -> dict[str, TopicLimit]:
    """An HGETALL reply of the limits hash (a dict or a flat list) as topic -> limit."""
    pairs = (reply.items() if isinstance(reply, dict)
             else zip(reply[::2], reply[1::2], strict=True))
    return {text(topic): TopicLimit.from_stored(text(raw)) for topic, raw in pairs}


def limits_plan(cfg: QueueSpec) -> Plan[dict[str, TopicLimit]]:
    """The limited topics of the queue and their limits."""
    return parse_limits((yield Command(("HGETALL", limits_key(cfg.name)))))


def running_plan(cfg: QueueSpec, topics: list[str]) -> Plan[dict[str, int]]:
    """Leases held now per topic (jobs running under a concurrency limit; expired ones count
    until the next take drops them)."""
    keys = PartitionKeys(cfg.name, 0)
    held: dict[str, int] = {}
    for topic in topics:  # one command each: a limited topic or two, seldom more
        held[topic] = int((yield Command(("ZCARD", keys.leases(topic)))))
    return held


def take_call(keys: PartitionKeys, group: str, consumer: str, topic: str,
              wanted: int) -> ScriptCall:
    """The one ``takeLimited`` call: up to ``wanted`` new entries of ``topic`` for
    ``consumer``, no more than the topic's limit lets start now."""
    return script("takeLimited").call(keys.script_keys(), [group, consumer, topic, wanted])


@dataclass(frozen=True)
class TakeReply:
    """What ``takeLimited`` answered: the entries read (stream entry id, fields), why not more
    (``GOT_ALL``, ``RATE``, ``CONCURRENCY``, ``DRAINED``), how long to wait (ms), and the group's
    last delivered id (when drained: block on XREAD from there)."""

    entries: list[tuple[str, dict[Any, Any]]]
    reason: int
    wait_ms: int
    last_id: str


def parse_take(reply: Any) -> TakeReply:
    """Parse ``{entries, reason, wait_ms, last_id}``."""
    entries = [(text(e[0]), dict(zip(e[1][::2], e[1][1::2], strict=True)))
               for e in (reply[0] or [])]
    return TakeReply(entries, int(reply[1]), int(reply[2]), text(reply[3]))
