"""The plans of limits (docs/limits.md): set or clear a topic's limit, read the limits, and the
take-with-limit call every taker shares (``take_call`` + ``parse_take``: ``takeLimited``).

Limits live in partition 0's hash tag, next to its topic stream, so a take there is one
script; a take on another partition leases in partition 0's slot first
(``consume/core/leasing.py``, docs/limits.md#more-than-one-partition).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from ..base import validation
from ..base.errors import ValidationError
from ..protocol.keys import PartitionKeys, partition_keys
from ..protocol.plan import Command, Commands, Plan
from ..protocol.queue_spec import QueueSpec
from ..protocol.replies import field_map, text
from ..protocol.scripts import ScriptCall, script
from .rates import TopicLimit, concurrency, parse_rate

# reasons of a take reply
GOT_ALL, RATE, CONCURRENCY, DRAINED = 0, 1, 2, 3


def limits_key(queue: str) -> str:
    """The key of a queue's limits (partition 0's hash tag)."""
    return PartitionKeys(queue, 0).limits


def checked_limit(topic: str, rate: Any, conc: Any, key_rate: Any = None,
                  key_conc: Any = None) -> tuple[str, TopicLimit]:
    """Validate the arguments of ``limit`` (each wrong one named)."""
    name = validation.topic(topic)
    return name, TopicLimit(None if rate is None else parse_rate(rate),
                            None if conc is None else concurrency(conc),
                            None if key_rate is None else parse_rate(key_rate, "key_rate"),
                            None if key_conc is None else concurrency(key_conc,
                                                                      "key_concurrency"))


def limit_call(topic: str, rate: Any, conc: Any, clear: bool, key_rate: Any = None,
               key_conc: Any = None) -> None:
    """Check how ``limit`` was called, before its plan runs (both faces call it first).

    ``limit(topic)`` with nothing to set clears the limit, while ``streamdelay limit Q T`` with
    no option shows it: the same call with two meanings. Showing is the meaning kept: the bare
    library call still clears, with a DeprecationWarning, until a later release makes it read
    the limit as the CLI does; clear with ``clear=True`` (what ``--clear`` calls), read with
    ``limits()`` (docs/limits.md#one-call-one-meaning)."""
    nothing = rate is None and conc is None and key_rate is None and key_conc is None
    if clear and not nothing:
        raise ValidationError("limit: give either clear=True or rate/concurrency/key_rate/"
                              "key_concurrency, not both", field="clear")
    if nothing and not clear:
        warnings.warn(
            f"limit({topic!r}) with no rate and no concurrency clears the limit; that meaning "
            f"is deprecated: `streamdelay limit QUEUE TOPIC` with no option shows the limit, "
            f"and a later release makes this call do the same. Clear it with "
            f"limit({topic!r}, clear=True); read it with limits().get({topic!r})",
            DeprecationWarning, stacklevel=3)


def set_limit_plan(cfg: QueueSpec, topic: str, rate: Any = None,
                   conc: Any = None, key_rate: Any = None, key_conc: Any = None) -> Plan[bool]:
    """Set ``topic``'s limit (all None: clear it); True when this call changed it. The key
    limit goes to every partition (``setKeyLimit``): a key's jobs and state live in one."""
    name, limit = checked_limit(topic, rate, conc, key_rate, key_conc)
    # durable: under replicas= a failover cannot drop or undo a limit change
    calls = [script("setLimit").call([limits_key(cfg.name)], [name, *limit.stored()],
                                     durable=True)]
    calls += [script("setKeyLimit").call([keys.key_limits], [name, *limit.key_stored()],
                                         durable=True)
              for keys in partition_keys(cfg.name, cfg.partitions)]
    replies = yield calls
    return any(bool(int(reply)) for reply in replies)


def parse_limits(reply: Any) -> dict[str, TopicLimit]:
    """An HGETALL reply of the limits hash (a dict or a flat list) as topic -> limit."""
    return {topic: TopicLimit.from_stored(raw) for topic, raw in field_map(reply).items()}


def limits_plan(cfg: QueueSpec) -> Plan[dict[str, TopicLimit]]:
    """The limited topics of the queue and their limits (with their key limits, as partition
    0 holds them: every partition holds the same)."""
    topics, keyed = yield Commands((Command(("HGETALL", limits_key(cfg.name))),
                                    Command(("HGETALL", PartitionKeys(cfg.name, 0).key_limits))))
    found = parse_limits(topics)
    for name, raw in parse_limits_raw(keyed).items():
        found[name] = found.get(name, TopicLimit()).with_keys(raw)
    return {name: limit for name, limit in found.items() if str(limit) != "no limit"}


def parse_limits_raw(reply: Any) -> dict[str, str]:
    """An HGETALL reply of a limits hash (a dict or a flat list) as topic -> stored text."""
    return field_map(reply)


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
