"""Rendering for the ``streamdelay`` CLI: tables, job details and times (secrets: masking.py).

Pure functions from result objects to text, so ``cli/commands.py`` stays about commands and exit
codes.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import msgspec

from ..base.models import ClaimResult, DeadJob, EnqueueResult, JobInfo, QueueStats, TopicStats

# The tables fit 80 columns with realistic names (tests/system/test_cli_width.py): a row holds the
# short fields, anything long (an error, a consumer, a schedule's spec) goes on an indented line
# under it, and notes (pauses, limits) under the table (docs/cli.md#common-rules).
STATS_COLUMNS = ("TOPIC", "GROUP", "DELAYED", "READY", "RESERVED", "DEAD", "LAG")
DEAD_COLUMNS = ("ID", "TOPIC", "TRIES", "DEAD AT (UTC)")
DETAIL_WIDTH = 76  # an indented detail line, within 80 columns
WIDTH = 80  # every line the CLI prints for people (tests/system/test_cli_width.py)
NO_DUE_YET = "after its parents (no due time yet)"  # a waiting job (docs/workflows.md)


OUT_OF_RANGE = "out of range"


def _utc(epoch_ms: int) -> datetime | None:
    """The UTC moment of ``epoch_ms``; None past the year 9999 (a foreign record's due time,
    docs/security.md#receipts), which every listing shows as ``out of range``."""
    try:
        return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return None


def iso_ms(epoch_ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds: ``2025-01-31T09:30:00.250Z``;
    ``out of range`` past the year 9999."""
    moment = _utc(epoch_ms)
    if moment is None:
        return OUT_OF_RANGE
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_seconds(epoch_ms: int) -> str:
    """Epoch milliseconds as a UTC time to the second, for tables: ``2025-01-31 09:30:00``;
    ``out of range`` past the year 9999."""
    moment = _utc(epoch_ms)
    return OUT_OF_RANGE if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def lag_text(ms: int) -> str:
    """A lag for people: ``0 s``, ``0.4 s``, ``43 s``, ``12 min``, ``5 h``, ``3 d`` (the raw
    milliseconds stay in ``--json``)."""
    seconds = ms / 1000
    if ms <= 0:
        return "0 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    for unit, size, above in (("d", 86400, 2 * 86400), ("h", 3600, 2 * 3600),
                              ("min", 60, 120)):
        if seconds >= above:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"


def when(epoch_ms: int) -> str:
    """A server time for people: ISO UTC followed by the raw epoch ms."""
    return f"{iso_ms(epoch_ms)} ({epoch_ms})"


def due_text(due: int, state: str) -> str:
    """A job's due time for people; a job waiting for its parents has none yet (its record
    holds 0 until its parents are done, docs/workflows.md), which ``jobs`` shows the same way."""
    return NO_DUE_YET if state == "waiting" else when(due)


def to_json(value: Any) -> str:
    """One line of JSON; dataclasses become objects, bytes become base64 (msgspec rules)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return msgspec.json.encode(value).decode()


def key_values(rows: Sequence[tuple[str, str]], cut: Sequence[str] = ("error",)) -> str:
    """Aligned ``key  value`` lines within ``WIDTH`` columns: a value of a key in ``cut`` (an
    error: the whole text is in ``--json``) is its first line, cut with ``...``; any other long
    value wraps on purpose, its next lines indented under the value column."""
    width = max((len(key) for key, _ in rows), default=0)
    room = max(WIDTH - width - 2, 20)
    lines: list[str] = []
    for key, value in rows:
        if key in cut:
            value = first_line(value, room)
        parts = textwrap.wrap(value, room, break_on_hyphens=False) if len(value) > room else []
        lines.append(f"{key.ljust(width)}  {parts[0] if parts else value}")
        lines.extend(" " * (width + 2) + part for part in parts[1:])
    return "\n".join(lines)


def packed(fields: Sequence[str], detail: str = "") -> list[str]:
    """``fields`` joined by two spaces on lines within ``WIDTH`` columns, wrapping on purpose:
    a field that does not fit goes on the next line, indented by two (a field is never cut: ids
    are copied from here); then the first line of ``detail``, on the last line when it fits,
    else on its own indented line cut with ``...`` (the whole text is in ``--json``)."""
    lines = [fields[0]] if fields else [""]
    for cell in fields[1:]:
        if len(lines[-1]) + 2 + len(cell) <= WIDTH:
            lines[-1] += "  " + cell
        else:
            lines.append("  " + cell)
    text = first_line(detail, WIDTH)
    if text and len(lines[-1]) + 2 + len(text) <= WIDTH:
        lines[-1] += "  " + text
    elif text:
        lines.append("  " + first_line(detail, WIDTH - 2))
    return lines


def table(header: Sequence[str], rows: Sequence[Sequence[str]], *, align: str = "",
          details: Sequence[str] | None = None, numeric_from: int | None = None) -> str:
    """A plain text table; ``align`` has one letter per column, ``l`` or ``r`` (numbers), for
    its header and its cells alike (``numeric_from=N``: the columns from N on are ``r``).
    ``details`` (one per row, may be empty) go on an indented line under their row, cut to
    ``DETAIL_WIDTH``."""
    if numeric_from is not None:
        align = "l" * numeric_from + "r" * (len(header) - numeric_from)
    align = align.ljust(len(header), "l")
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(w) if how == "r" else cell.ljust(w)
                 for cell, w, how in zip(cells, widths, align, strict=True)]
        return "  ".join(parts).rstrip()

    lines = [line(header)]
    for index, cells in enumerate(rows):
        lines.append(line(cells))
        detail = details[index] if details is not None else ""
        if detail:
            lines.append("  " + first_line(detail, DETAIL_WIDTH - 2))
    return "\n".join(lines)


def enqueue_text(result: EnqueueResult, replace: bool = False) -> str:
    """What ``enqueue`` prints: id, due, what happened (``outcome``), state. ``created`` is
    the word ``get`` uses for the creation time, so it is not used here."""
    if result.created:
        outcome = "new job"
    elif replace:
        outcome = "the id existed: replaced (--replace)"
    else:
        outcome = "the id existed: nothing changed"
    return key_values([("id", result.id), ("due", due_text(result.due, result.state)),
                       ("outcome", outcome),
                       ("state", result.state)])


def job_text(info: JobInfo) -> str:
    """What ``get`` prints for one job."""
    rows = [("id", info.id), ("topic", info.topic), ("state", info.state),
            ("due", due_text(info.due, info.state)), ("created", when(info.created)),
            ("attempts", f"{info.attempts} of {info.max_attempts}"), ("ttr", f"{info.ttr:g}s")]
    if info.consumer is not None:
        rows.append(("consumer", f"{info.consumer} (idle {info.idle_ms} ms, "
                                 f"{info.deliveries} deliveries)"))
    if info.priority != 5 or info.key is not None:  # shown when the job has options
        rows.append(("priority", str(info.priority)))
    if info.key is not None:
        rows.append(("key", info.key))
    if info.expires_at is not None:
        rows.append(("expires", when(info.expires_at)))
    if info.died is not None:
        rows.append(("died", when(info.died)))
    if info.error:
        rows.append(("error", info.error))  # its first line (key_values)
    if info.parents:  # docs/workflows.md
        rows.append(("parents", ", ".join(f"{p} ({state})" for p, state in info.parents.items())))
    if info.children:
        rows.append(("children", ", ".join(info.children)))
    if info.progress is not None:
        rows.append(("progress", to_json(info.progress)))
    if info.headers:
        rows.append(("headers", to_json(info.headers)))
    rows.append(("body", to_json(info.body)))
    return key_values(rows)


def _stats_row(row: TopicStats) -> list[str]:
    return [row.topic, row.group or "-", str(row.delayed), str(row.ready), str(row.reserved),
            str(row.dead), lag_text(row.lag_ms)]


def limit_text(row: TopicStats) -> str:
    """A topic's limit as ``stats`` shows it: ``50/s, 2/3 running``."""
    parts = [row.rate] if row.rate else []
    if row.concurrency:
        parts.append(f"{row.leases}/{row.concurrency} running")
    return ", ".join(parts) or "-"


def key_limit_text(row: TopicStats) -> str:
    """A topic's key limit as ``stats`` shows it: ``each key 10/m, 2 at once``."""
    parts = ([row.key_rate] if row.key_rate else []) + (
        [f"{row.key_concurrency} at once"] if row.key_concurrency else [])
    return "each key " + ", ".join(parts) if parts else "-"


def keys_text(row: TopicStats) -> str:
    """A staged topic's top keys by ready jobs: ``acme 120, bolt 4, (no key) 2``."""
    return ", ".join(f"{key or '(no key)'} {n}" for key, n in row.keys) or "none ready"


def stats_text(stats: QueueStats) -> str:
    """The per-topic table of ``stats`` with a TOTAL row; under it, the paused topics and the
    limits (docs/limits.md)."""
    if not stats.topics:
        return f"queue {stats.queue}: no topics yet"
    rows = [_stats_row(row) for row in stats.topics.values()]
    total = _stats_row(stats.total)
    total[0], total[1] = "TOTAL", ""
    columns: tuple[str, ...] = STATS_COLUMNS
    align = "llrrrrr"
    if stats.total.waiting:  # jobs waiting for their parents (docs/workflows.md)
        columns, align = (*columns[:2], "WAITING", *columns[2:]), "llrrrrrr"
        for row, source in zip(rows, [*stats.topics.values(), stats.total], strict=False):
            row.insert(2, str(source.waiting))
        total.insert(2, str(stats.total.waiting))
    lines = [table(columns, [*rows, total], align=align)]
    paused = [row.topic for row in stats.topics.values() if row.paused]
    limited = [row for row in stats.topics.values() if row.rate or row.concurrency]
    keyed = [row for row in stats.topics.values() if row.key_rate or row.key_concurrency]
    staged = [row for row in stats.topics.values() if row.staged]
    if paused or limited or keyed or staged:
        lines.append("")
    if paused:
        lines.append(f"paused: {', '.join(paused)}")
    lines.extend(f"limit: {row.topic} {limit_text(row)}" for row in limited)
    lines.extend(f"key limit: {row.topic} {key_limit_text(row)}" for row in keyed)
    lines.extend(f"ready by key: {row.topic} {keys_text(row)}" for row in staged)
    return "\n".join(lines)


def stats_json(stats: QueueStats) -> str:
    """``stats`` as one JSON object: queue, server time, topics, total."""
    return to_json({"queue": stats.queue, "now": stats.now,
                    "topics": {name: dataclasses.asdict(row) for name, row in stats.topics.items()},
                    "total": dataclasses.asdict(stats.total)})


def first_line(text: str, width: int) -> str:
    """The first line of ``text``, cut to ``width`` with ``...``."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[:width - 3] + "..."


def dead_text(jobs: Sequence[DeadJob]) -> str:
    """The table of ``dead list``."""
    if not jobs:
        return "no dead jobs"
    rows = [[job.id, job.topic, str(job.attempts), utc_seconds(job.at)] for job in jobs]
    return table(DEAD_COLUMNS, rows, align="llrl", details=[job.error for job in jobs])


def dead_job_of(info: JobInfo) -> DeadJob:
    """A dead job read by id, in the shape of a ``dead list`` row (time: when it died)."""
    return DeadJob(info.id, info.topic, info.error or "", info.attempts,
                   info.died if info.died is not None else info.due, "")


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
    # a long list of ids wraps onto indented lines, never cut (docs/cli.md#common-rules)
    return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  ", break_long_words=False,
                                    break_on_hyphens=False) for line in lines)
