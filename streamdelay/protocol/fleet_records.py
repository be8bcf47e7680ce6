"""What a live consumer says of itself in the fleet record, and reading it back
(``Queue.workers``; docs/operations.md#workers, docs/keys.md#fleet). I/O-free.

Written by ``joinFleet`` with the renewal each consumer already does (a worker every
``fleet_every`` seconds and at the start of its graceful stop, a pull/HTTP consumer before its
reserves): one field per live consumer in partition 0's ``workers`` hash, no write per job.
Read with one ``HGETALL`` of that hash, whose size is the number of live consumers plus the
expired ones its writers have not sampled away yet.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from ..base.fleet import WorkerInfo, WorkerState
from .keys import PartitionKeys
from .plan import Command, Plan
from .replies import field_map, text
from .scripts import script

RUNNING_SHOWN = 64  # running job ids one entry keeps (the oldest first): bounds the field
STATES: tuple[WorkerState, ...] = ("running", "quiet", "stopping")


def info_blob(*, host: str, pid: int, version: str, group: str, topics: Sequence[str],
              concurrency: int, started_ms: int, running: Sequence[tuple[str, float]],
              state: WorkerState, kind: str = "worker") -> str:
    """The JSON a consumer writes with its fleet entry; ``running``: (job id, began epoch s),
    of which the ``RUNNING_SHOWN`` that began first are kept."""
    shown = sorted(running, key=lambda r: r[1])[:RUNNING_SHOWN]
    return json.dumps({
        "kind": kind, "host": host, "pid": pid, "version": version, "group": group,
        "topics": sorted(topics), "concurrency": concurrency, "started": started_ms,
        "running": [[job_id, round(began, 3)] for job_id, began in shown],
        "running_count": len(running), "state": state}, separators=(",", ":"))


def _parse(name: str, value: str, now_ms: int) -> WorkerInfo | None:
    """One field of the workers hash; None when expired or not readable (a foreign write)."""
    until, _, rest = value.partition("|")
    seen, _, blob = rest.partition("|")
    if not (until.isdigit() and seen.isdigit()) or int(until) < now_ms:
        return None
    try:
        info: dict[str, Any] = json.loads(blob)
        running = [(str(r[0]), float(r[1])) for r in info.get("running", [])]
        state = info.get("state")
        return WorkerInfo(
            name=name, host=str(info.get("host", "")), pid=int(info.get("pid", 0)),
            version=str(info.get("version", "")), group=str(info.get("group", "")),
            topics=tuple(str(t) for t in info.get("topics", [])),
            concurrency=int(info.get("concurrency", 0)),
            running=tuple(r[0] for r in running),
            started=int(info.get("started") or seen) / 1000, last_seen=int(seen) / 1000,
            state=state if state in STATES else "running",
            running_since=tuple(r[1] for r in running),
            running_count=int(info.get("running_count", len(running))),
            kind=str(info.get("kind", "worker")))
    except (ValueError, TypeError, IndexError, AttributeError):
        return None


def workers_plan(queue: str) -> Plan[list[WorkerInfo]]:
    """The live consumers of ``queue`` by name (read only: expired fields are skipped, their
    writers remove them)."""
    keys = PartitionKeys(queue, 0)
    now = yield Command(("TIME",))  # alone: a cluster pipeline takes keyed commands only
    now_ms = int(text(now[0])) * 1000 + int(text(now[1])) // 1000
    reply = yield Command(("HGETALL", keys.workers))
    found = (_parse(name, value, now_ms) for name, value in field_map(reply).items())
    return sorted((w for w in found if w is not None), key=lambda w: w.name)


COMMAND_TTL_S = 600.0  # a quiet or stop waits this long for its worker to read it
WorkerCommand = Literal["quiet", "stop"]


def command_plan(queue: str, name: str, verb: WorkerCommand) -> Plan[int]:
    """``commandWorker``: tell the live worker ``name`` to quiet or stop (docs/operations.md
    #quiet-and-stop). 1 changed, 0 already so, -1 no live consumer of that name, -2 a
    pull/HTTP consumer."""
    keys = PartitionKeys(queue, 0)
    call = script("commandWorker").call([keys.workers, keys.commands],
                                        [name, verb, int(COMMAND_TTL_S * 1000)])
    return int((yield call))


def command_read(queue: str, name: str) -> Command:
    """``HGET`` of the command for worker ``name`` (the pause watch sends it along)."""
    return Command(("HGET", PartitionKeys(queue, 0).commands, name))


def parse_command(reply: Any, started_ms: int) -> WorkerCommand | None:
    """The command a ``command_read`` reply holds for the process started at ``started_ms``
    (None: none, or one for an earlier process of the same name)."""
    if reply is None:
        return None
    verb, _, rest = text(reply).partition("|")
    started, _, _ = rest.partition("|")
    if started != str(started_ms) or verb not in ("quiet", "stop"):
        return None
    return "quiet" if verb == "quiet" else "stop"
