"""Rendering for the ``streamdelay`` CLI: tables, job details and times (secrets: masking.py).

Pure functions from result objects to text, so ``cli.py`` stays about commands and exit codes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import msgspec

from ..base.models import ClaimResult, DeadJob, EnqueueResult, JobInfo, QueueStats, TopicStats

STATS_COLUMNS = ("TOPIC", "GROUP", "DELAYED", "READY", "RESERVED", "DEAD", "LAG_MS")
DEAD_COLUMNS = ("ID", "TOPIC", "ATTEMPTS", "DEAD_AT", "ERROR")
ERROR_WIDTH = 60


def iso_ms(epoch_ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds: ``2025-01-31T09:30:00.250Z``;
    ``out of range`` past the year 9999 (a foreign record's due time)."""
    try:
        moment = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return "out of range"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def when(epoch_ms: int) -> str:
    """A server time for people: ISO UTC followed by the raw epoch ms."""
    return f"{iso_ms(epoch_ms)} ({epoch_ms})"


def to_json(value: Any) -> str:
    """One line of JSON; dataclasses become objects, bytes become base64 (msgspec rules)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return msgspec.json.encode(value).decode()


def key_values(rows: Sequence[tuple[str, str]]) -> str:
    """Aligned ``key  value`` lines."""
    width = max((len(key) for key, _ in rows), default=0)
    return "\n".join(f"{key.ljust(width)}  {value}" for key, value in rows)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, numeric_from: int) -> str:
    """A plain text table; columns from ``numeric_from`` on are right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if i >= numeric_from else cell.ljust(w)
                 for i, (cell, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(parts).rstrip()

    return "\n".join(line(cells) for cells in [header, *rows])


def enqueue_text(result: EnqueueResult) -> str:
    """What ``enqueue`` prints: id, due, whether it was created, state."""
    return key_values([
        ("id", result.id),
        ("due", when(result.due)),
        ("created", "yes" if result.created else "no (the id already existed; nothing changed)"),
        ("state", result.state),
    ])


def job_text(info: JobInfo) -> str:
    """What ``get`` prints for one job."""
    rows = [("id", info.id), ("topic", info.topic), ("state", info.state),
            ("due", when(info.due)), ("created", when(info.created)),
            ("attempts", f"{info.attempts} of {info.max_attempts}"), ("ttr", f"{info.ttr:g}s")]
    if info.consumer is not None:
        rows.append(("consumer", f"{info.consumer} (idle {info.idle_ms} ms, "
                                 f"{info.deliveries} deliveries)"))
    if info.error:
        rows.append(("error", info.error.splitlines()[0]))
    if info.headers:
        rows.append(("headers", to_json(info.headers)))
    rows.append(("body", to_json(info.body)))
    return key_values(rows)


def _stats_row(row: TopicStats) -> list[str]:
    topic = f"{row.topic} (paused)" if row.paused else row.topic
    return [topic, row.group or "-", str(row.delayed), str(row.ready), str(row.reserved),
            str(row.dead), str(row.lag_ms)]


def limit_text(row: TopicStats) -> str:
    """A topic's limit as the LIMIT column of ``stats`` shows it: ``50/s, 2/3 running``."""
    parts = [row.rate] if row.rate else []
    if row.concurrency:
        parts.append(f"{row.leases}/{row.concurrency} running")
    return ", ".join(parts) or "-"


def stats_text(stats: QueueStats) -> str:
    """The per-topic table of ``stats`` with a TOTAL row (and a LIMIT column when a topic
    has a limit, docs/limits.md)."""
    if not stats.topics:
        return f"queue {stats.queue}: no topics yet"
    rows = [_stats_row(row) for row in stats.topics.values()]
    total = _stats_row(stats.total)
    total[0], total[1] = "TOTAL", ""
    if not any(row.rate or row.concurrency for row in stats.topics.values()):
        return table(STATS_COLUMNS, [*rows, total], numeric_from=2)
    for cells, row in zip(rows, stats.topics.values(), strict=True):
        cells.append(limit_text(row))
    total.append("")
    return table((*STATS_COLUMNS, "LIMIT"), [*rows, total], numeric_from=2)


def stats_json(stats: QueueStats) -> str:
    """``stats`` as one JSON object: queue, server time, topics, total."""
    return to_json({"queue": stats.queue, "now": stats.now,
                    "topics": {name: dataclasses.asdict(row) for name, row in stats.topics.items()},
                    "total": dataclasses.asdict(stats.total)})


def _first_line(text: str, width: int = ERROR_WIDTH) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[:width - 3] + "..."


def dead_text(jobs: Sequence[DeadJob]) -> str:
    """The table of ``dead list``."""
    if not jobs:
        return "no dead jobs"
    rows = [[job.id, job.topic, str(job.attempts), iso_ms(job.at), _first_line(job.error)]
            for job in jobs]
    return table(DEAD_COLUMNS, rows, numeric_from=2)


def dead_job_of(info: JobInfo) -> DeadJob:
    """A dead job read by id, in the shape of a ``dead list`` row (time: its last due)."""
    return DeadJob(info.id, info.topic, info.error or "", info.attempts, info.due, "")


def claim_text(result: ClaimResult, group: str, to: str | None) -> str:
    """What ``claim`` prints: what moved where, what went dead, what was cleaned."""
    lines: list[str] = []
    if result.moved:
        where = f"handed to consumer {to}" if to else "re-queued (any live worker gets them next)"
        lines.append(f"{len(result.moved)} job(s) {where}: {', '.join(result.moved)}")
    if result.dead:
        lines.append(f"{len(result.dead)} job(s) had no attempts left and went dead: "
                     f"{', '.join(result.dead)}")
    if result.cleaned:
        lines.append(f"{result.cleaned} stale entry(ies) of deleted jobs cleaned from the "
                     f"pending list")
    if not lines:
        lines.append(f"nothing to claim: no delivery of group {group} is stuck")
    if result.removed:
        lines.append(f"removed {len(result.removed)} consumer(s) that were gone and owned "
                     f"nothing: {', '.join(result.removed)}")
    return "\n".join(lines)
