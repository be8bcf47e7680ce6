"""Durability across failover, the I/O-free part: which steps are waited on, the ``WAIT`` /
``WAITAOF`` command that follows them in the same pipeline, and the reading of its reply.

A script call that creates or changes a job's fate is built with ``durable=True``
(``Script.call``); when the queue asks for ``replicas=N`` (or ``local_fsync``), the runner
(``io/runner.py``) appends ``WAIT N timeout`` (or ``WAITAOF``) to the pipeline that carries
such a call, on the same connection, and ``check_wait`` turns a short count into ``NotDurable``
(docs/guarantees.md#durability, docs/design.md#durable-steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import ConfigError, NotDurable
from .plan import Command, Commands, EachCall, Step
from .scripts import ScriptCall

WAITAOF_VERSION = (7, 2)  # the first Redis with WAITAOF


@dataclass(frozen=True)
class Durability:
    """What a durable call waits for: ``replicas`` replicas (``WAIT``) and, with
    ``local_fsync``, the primary's own AOF fsync too (``WAITAOF 1 replicas``, Redis >= 7.2)."""

    replicas: int
    timeout_ms: int
    local_fsync: bool = False

    @property
    def active(self) -> bool:
        """True when there is anything to wait for."""
        return self.replicas > 0 or self.local_fsync

    def command(self) -> Command:
        """The command appended after the durable calls of a step."""
        if self.local_fsync:
            return Command(("WAITAOF", 1, self.replicas, self.timeout_ms))
        return Command(("WAIT", self.replicas, self.timeout_ms))


FENCE_TTL_MS = 10_000  # the fence key goes 10 s after the last durable call of its partition


def fence(calls: Sequence[ScriptCall]) -> tuple[Command, ...]:
    """``HSET <hash tag>:durable w ""`` and ``PEXPIRE <that key> 10000``, sent right before
    ``WAIT`` on every topology (single server, Sentinel, cluster).

    ``WAIT`` counts replicas up to the offset of the *connection's own* last propagated write.
    On Redis 7.0 any command moves that offset to the server's latest, but on Valkey 8 (and
    Redis 7.2, which it forked from) only a command that propagated something does: a script
    that wrote nothing leaves it behind, so the retry of a ``NotDurable`` call from another
    connection (it finds the job written already) would be confirmed while the first write is
    still missing on the replicas. ``HSET`` is propagated even when the value is unchanged, and
    a keyed write reaches the replication stream on a cluster too (``PUBLISH`` and ``SPUBLISH``
    travel on the cluster bus there), so after it the offset is the node's latest. The key is in
    the slot of the first call's partition, which is on the node the calls went to, and inside
    the queue's ACL key pattern (docs/guarantees.md#durability-across-failover, docs/keys.md,
    tests/system/test_durability.py, tests/system/test_durability_cluster.py).
    """
    key = calls[0].keys[0] if calls and calls[0].keys else "sd"
    tag = key[: key.index("}") + 1] if "}" in key else key
    return (Command(("HSET", f"{tag}:durable", "w", "")),
            Command(("PEXPIRE", f"{tag}:durable", FENCE_TTL_MS)))


def step_calls(step: Step) -> list[ScriptCall]:
    """The script calls of a step (none for a plain command)."""
    if isinstance(step, ScriptCall):
        return [step]
    if isinstance(step, EachCall):
        return list(step.calls)
    if isinstance(step, (Command, Commands)):
        return []
    return list(step)


def is_durable(step: Step) -> bool:
    """True when a call of ``step`` changes a job's fate (built with ``durable=True``)."""
    return any(call.durable for call in step_calls(step))


def server_version(info: Any) -> tuple[int, int]:
    """(major, minor) from an ``INFO server`` reply (a dict, or the raw text)."""
    if isinstance(info, dict):
        raw = info.get("redis_version", info.get(b"redis_version", "0.0"))
    else:
        text = info.decode() if isinstance(info, bytes) else str(info)
        raw = next((line.split(":", 1)[1] for line in text.splitlines()
                    if line.startswith("redis_version:")), "0.0")
    raw = raw.decode() if isinstance(raw, bytes) else str(raw)
    parts = [*raw.strip().split("."), "0", "0"][:2]
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return 0, 0


def check_server(durability: Durability, version: tuple[int, int]) -> None:
    """Refuse ``local_fsync`` on a server without ``WAITAOF`` (detected at connect)."""
    if durability.local_fsync and version < WAITAOF_VERSION:
        raise ConfigError(
            f"local_fsync: WAITAOF needs Redis {WAITAOF_VERSION[0]}.{WAITAOF_VERSION[1]} or "
            f"newer, this server is {version[0]}.{version[1]}; use replicas= alone (WAIT) "
            f"(docs/guarantees.md#durability)", field="local_fsync")


def describe(calls: Sequence[ScriptCall]) -> str:
    """What a step wrote, for the ``NotDurable`` message: the scripts and how many calls."""
    names = sorted({call.script.name for call in calls if call.durable})
    count = sum(1 for call in calls if call.durable)
    return f"{', '.join(names)} ({count} call{'s' if count != 1 else ''})"


def check_wait(durability: Durability, reply: Any, calls: Sequence[ScriptCall]) -> None:
    """Raise ``NotDurable`` when the ``WAIT``/``WAITAOF`` reply confirms too little.

    ``WAIT`` answers the number of replicas that acknowledged; ``WAITAOF`` answers
    ``[local fsyncs (0 or 1), replicas that fsynced]``. An error reply (``WAITAOF`` on a primary
    without ``appendonly yes``) is a ``ConfigError``.
    """
    if isinstance(reply, Exception):
        name = "local_fsync" if durability.local_fsync else "replicas"
        raise ConfigError(f"{name}: {durability.command().args[0]} failed: {reply} "
                          f"(docs/guarantees.md#durability)", field=name) from reply
    if durability.local_fsync:
        local, acked = (int(value) for value in reply)
    else:
        local, acked = 1, int(reply)
    if acked >= durability.replicas and local >= 1:
        return
    fsync = "" if local >= 1 else " and the primary had not fsynced it to its AOF"
    raise NotDurable(
        f"not durable: {describe(calls)} was written on the primary, but {acked} of "
        f"{durability.replicas} replicas confirmed it within {durability.timeout_ms} ms{fsync}; "
        f"the write may exist, and a failover now could lose it. Retrying is safe: every call "
        f"that creates or changes a job is idempotent by id (docs/guarantees.md#durability)",
        acked=acked, replicas=durability.replicas,
        script=calls[0].script.name if calls else None)


__all__ = ["Durability", "check_server", "check_wait", "describe", "fence", "is_durable",
           "server_version", "step_calls"]
