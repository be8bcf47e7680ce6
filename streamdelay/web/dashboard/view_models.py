"""View models of the dashboard: pure functions from what the queue answers (``QueueStats``,
``JobPage``, ``JobInfo``, a ``LatenessWindow``) to what the templates show (docs/dashboard.md).

Nothing here does I/O, so every page's content is tested without a server or a browser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import msgspec

from ...base.models import JobInfo, QueueStats
from ...client.listing import JobPage
from ...telemetry.lateness import LatenessWindow, quantile_ms
from .chart import lateness_chart, lateness_panel, throughput_panel

LATENESS_MINUTES = 15  # the window of the p50 / p99 columns and of the chart
UNKNOWN = "\N{EN DASH}"  # shown where there is no figure (no handler start in the window)
BODY_CHARS = 20_000  # a job page shows at most this much of a body
ERROR_CHARS = 300  # a list row shows this much of a last error

# what the job page offers in each state (docs/dashboard.md#actions)
ACTIONS_BY_STATE: dict[str, tuple[str, ...]] = {
    "delayed": ("run_now", "reschedule", "cancel"),
    "ready": ("reschedule", "cancel"),
    "reserved": ("cancel",),
    "dead": ("replay", "purge"),
    "done": (),
    "waiting": ("cancel",),  # for its parents (docs/workflows.md): no due time to change yet
}


def duration(ms: float | None) -> str:
    """A duration for people: ``0.8 ms``, ``12 ms``, ``2.5 s``, ``3 m 20 s``, ``2 h 5 m``,
    ``3 d 4 h``; ``UNKNOWN`` for None."""
    if ms is None:
        return UNKNOWN
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60),
                                      ("m", 60, "s", 1)):
        if seconds >= size:
            whole, rest = divmod(int(seconds), size)
            part = rest // sub_size
            return f"{whole} {unit} {part} {sub}" if part else f"{whole} {unit}"
    return f"{seconds:.0f} s"  # unreachable: seconds >= 60 matched "m"


def moment(epoch_ms: int) -> str:
    """An epoch ms time as ``2026-11-23 22:15:03.120 UTC``."""
    try:
        when = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):  # past the year 9999: a foreign due time
        return f"out of range ({epoch_ms} ms)"
    return when.strftime("%Y-%m-%d %H:%M:%S.") + f"{epoch_ms % 1000:03d} UTC"


def relative(epoch_ms: int, now_ms: int) -> str:
    """``in 30 s`` / ``2 m ago`` / ``now`` relative to ``now_ms`` (both server clock)."""
    gap = epoch_ms - now_ms
    if abs(gap) < 1:
        return "now"
    return f"in {duration(gap)}" if gap > 0 else f"{duration(-gap)} ago"


@dataclass(frozen=True)
class TopicRow:
    """One line of a queue's topic table."""

    topic: str
    delayed: int
    ready: int
    reserved: int
    dead: int
    lag: str
    lag_ms: int
    paused: bool
    group: str
    waiting: int  # jobs waiting for their parents (docs/workflows.md)
    p50: str
    p99: str
    started: int  # handler starts in the window
    chart: str  # inline SVG
    limit: str = ""  # the topic's limit (docs/limits.md), e.g. "20/s, 1/2 running"; "" none
    warning: str = ""  # e.g. ready jobs that no consumer group reads
    lateness_panel: str = ""  # the queue page's charts (inline SVG), "" on the overview
    throughput_panel: str = ""
    settled: int = 0  # deliveries settled in the window (ok, retried, dead)
    keys: str = ""  # a staged topic's keys with the most ready jobs (docs/priorities.md)
    priorities: tuple[PriorityRow, ...] = ()  # a staged topic's lateness per priority


@dataclass(frozen=True)
class PriorityRow:
    """A staged topic's lateness of its jobs of one priority, shown under the topic's row
    (docs/dashboard.md#lateness)."""

    priority: str
    p50: str
    p99: str
    started: int  # handler starts in the window
    chart: str  # inline SVG


def warning_of(ready: int, group: str | None) -> str:
    """Why a topic needs a look: ready jobs and no consumer group, so nothing reads them (a
    worker or an HTTP consumer creates the group when it starts, docs/pull.md)."""
    if ready > 0 and not group:
        return (f"{ready} ready job{'s' if ready != 1 else ''} and no consumer group: nothing "
                f"reads this topic (start a worker or a consumer with a group)")
    return ""


def topic_rows(stats: QueueStats, window: LatenessWindow | None,
               minutes: int = LATENESS_MINUTES, detail: bool = False) -> list[TopicRow]:
    """The topic table: every topic the queue knows (and any that only has lateness), sorted,
    with p50 / p99 lateness over the window's last ``minutes`` and a per-minute chart;
    ``detail``: also the queue page's large lateness and throughput charts."""
    late = {} if window is None else window.topics
    rows = []
    for name in sorted(set(stats.topics) | set(late)):
        t = stats.topics.get(name)
        merged = window.merged(name, minutes) if window is not None else []
        per_minute = late.get(name, [])[-minutes:]
        pad: list[float | None] = [None] * (minutes - len(per_minute))  # right-aligned
        p50 = pad + [quantile_ms(m, 0.5) for m in per_minute]
        p99 = pad + [quantile_ms(m, 0.99) for m in per_minute]
        lag_ms = t.lag_ms if t else 0
        flow = _flow(window, name, minutes)
        panels = {}
        if detail:
            panels = {"lateness_panel": lateness_panel(p50, p99, title=f"{name}: lateness "
                                                       f"p50 / p99 per minute"),
                      "throughput_panel": throughput_panel(flow, title=f"{name}: started, "
                                                           f"succeeded, retried, dead per "
                                                           f"minute")}
        rows.append(TopicRow(
            topic=name, delayed=t.delayed if t else 0, ready=t.ready if t else 0,
            reserved=t.reserved if t else 0, dead=t.dead if t else 0,
            waiting=t.waiting if t else 0,
            lag=duration(lag_ms) if lag_ms > 0 else "0", lag_ms=lag_ms,
            paused=bool(t and t.paused), group=(t.group or "") if t else "",
            p50=duration(quantile_ms(merged, 0.5)) if merged else UNKNOWN,
            p99=duration(quantile_ms(merged, 0.99)) if merged else UNKNOWN,
            started=sum(merged),
            chart=lateness_chart(p50, p99, title=f"{name}: lateness p50 / p99 per minute, "
                                 f"last {minutes} min"),
            limit=", ".join(x for x in (
                limit_text(t.rate, t.concurrency, t.leases),
                key_limit_text(t.key_rate, t.key_concurrency)) if x) if t else "",
            keys=", ".join(f"{k or '(no key)'} {n}" for k, n in t.keys) if t else "",
            warning=warning_of(t.ready, t.group) if t else "",
            settled=sum(sum(flow[k]) for k in ("ok", "retried", "dead")),
            priorities=_priority_rows(window, name, minutes), **panels,
        ))
    return rows


def _priority_rows(window: LatenessWindow | None, topic: str,
                   minutes: int) -> tuple[PriorityRow, ...]:
    """A staged topic's priorities with handler starts in the last ``minutes``, highest first
    (none for a plain topic: its workers record no priority)."""
    if window is None:
        return ()
    found = window.priorities.get(topic, {})
    rows = []
    for priority in sorted(found, key=int, reverse=True):
        merged = window.merged(topic, minutes, priority)
        if not sum(merged):
            continue
        per_minute = found[priority][-minutes:]
        pad: list[float | None] = [None] * (minutes - len(per_minute))
        rows.append(PriorityRow(
            priority=priority, p50=duration(quantile_ms(merged, 0.5)),
            p99=duration(quantile_ms(merged, 0.99)), started=sum(merged),
            chart=lateness_chart(pad + [quantile_ms(m, 0.5) for m in per_minute],
                                 pad + [quantile_ms(m, 0.99) for m in per_minute],
                                 title=f"{topic} priority {priority}: lateness p50 / p99 per "
                                       f"minute, last {minutes} min")))
    return tuple(rows)


def _flow(window: LatenessWindow | None, topic: str, minutes: int) -> dict[str, list[int]]:
    """The last ``minutes`` of a topic's throughput, right-aligned (zeros before)."""
    series = window.throughput(topic) if window is not None else {}
    out = {}
    for name in ("started", "ok", "retried", "dead"):
        values = series.get(name, [])[-minutes:]
        out[name] = [0] * (minutes - len(values)) + values
    return out


def limit_text(rate: str | None, concurrency: int | None, leases: int) -> str:
    """A topic's limit as the stats table shows it: ``50/s, 2/3 running`` ("" without one)."""
    parts = [rate] if rate else []
    if concurrency:
        parts.append(f"{leases}/{concurrency} running")
    return ", ".join(parts)


def key_limit_text(rate: str | None, concurrency: int | None) -> str:
    """The limit each fairness key of a topic is held to: ``each key 10/m, 2 at once``."""
    parts = ([rate] if rate else []) + ([f"{concurrency} at once"] if concurrency else [])
    return "each key " + ", ".join(parts) if parts else ""


@dataclass(frozen=True)
class ScheduleRow:
    """One line of a queue's schedule list (read-only, docs/schedules.md)."""

    name: str
    topic: str
    when: str  # "cron 0 9 * * 1-5 (Europe/Paris)" or "every 30 s"
    next: str  # the next tick and how far away, or UNKNOWN (paused, never again)
    paused: bool


def schedule_rows(schedules: list[Any], now_ms: int) -> list[ScheduleRow]:
    """The schedule list of ``Queue.schedules()`` (``Schedule`` objects), by name."""
    rows = []
    for s in sorted(schedules, key=lambda s: s.name):
        when = (f"cron {s.cron} ({s.tz})" if s.cron else
                f"every {duration(s.every * 1000) if s.every else UNKNOWN}")
        upcoming = (UNKNOWN if s.paused or s.next_tick < 0 else
                    f"{moment(s.next_tick)} ({relative(s.next_tick, now_ms)})")
        rows.append(ScheduleRow(s.name, s.topic, when, upcoming, bool(s.paused)))
    return rows


@dataclass(frozen=True)
class Totals:
    """A queue's counts over all topics."""

    delayed: int
    ready: int
    reserved: int
    dead: int
    lag: str
    paused: int
    waiting: int = 0


def totals(rows: list[TopicRow]) -> Totals:
    """The queue's line of the overview: sums, the largest lag, how many topics are paused."""
    lag = max((r.lag_ms for r in rows), default=0)
    return Totals(sum(r.delayed for r in rows), sum(r.ready for r in rows),
                  sum(r.reserved for r in rows), sum(r.dead for r in rows),
                  duration(lag) if lag else "0", sum(r.paused for r in rows),
                  sum(r.waiting for r in rows))


def body_text(body: Any, limit: int = BODY_CHARS) -> str:
    """A job body for a page: indented JSON, or for raw bytes their UTF-8 text (else a hex
    dump), cut at ``limit`` characters with a note."""
    if isinstance(body, bytes):
        try:
            text = body.decode()
        except UnicodeDecodeError:
            text = body.hex(" ")
    else:
        try:
            text = msgspec.json.format(msgspec.json.encode(body), indent=2).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(body)
    if len(text) > limit:
        return text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"
    return text


@dataclass(frozen=True)
class JobView:
    """What the job page shows: labelled fields, body, headers, last error, actions."""

    id: str
    topic: str
    state: str
    fields: list[tuple[str, str]]
    body: str
    headers: list[tuple[str, str]]
    error: str | None
    actions: tuple[str, ...]


def reclaim_text(ttr_ms: int, idle_ms: int) -> str:
    """When a silent delivery is reclaimed: its ttr minus how long it has been idle (a
    worker's reclaim pass or ``claim`` then re-queues it, docs/worker.md)."""
    left = ttr_ms - idle_ms
    if left > 0:
        return f"in {duration(left)} unless touched or settled (ttr {duration(ttr_ms)})"
    return f"due now: idle {duration(idle_ms)} past its ttr {duration(ttr_ms)}, at the next " \
           f"reclaim pass"


def job_view(info: JobInfo, now_ms: int, group: str | None = None) -> JobView:
    """The job page of ``info`` (read at ``now_ms``, server clock); ``group``: the consumer
    group that serves its topic."""
    fields = [
        ("state", info.state),
        ("topic", info.topic),
        ("due", "when its parents have ended" if info.state == "waiting"
         else f"{moment(info.due)} ({relative(info.due, now_ms)})"),
        ("created", f"{moment(info.created)} ({relative(info.created, now_ms)})"),
        ("attempts", f"{info.attempts} failed of at most {info.max_attempts}"),
        ("ttr", duration(info.ttr_ms or info.ttr * 1000)),
    ]
    if info.priority != 5 or info.key is not None:  # a job with options (docs/producer.md)
        fields.append(("priority", str(info.priority)))
    if info.key is not None:
        fields.append(("key", info.key))
    if info.expires_at is not None:
        fields.append(("expires", f"{moment(info.expires_at)} "
                                  f"({relative(info.expires_at, now_ms)})"))
    if info.died is not None:
        fields.append(("died", f"{moment(info.died)} ({relative(info.died, now_ms)})"))
    if group and info.state in ("ready", "reserved"):
        fields.append(("group", group))
    if info.consumer is not None:
        fields.append(("consumer", info.consumer))
    if info.idle_ms is not None:
        fields.append(("idle", duration(info.idle_ms)))
        fields.append(("reclaimed", reclaim_text(info.ttr_ms or int(info.ttr * 1000),
                                                 info.idle_ms)))
    if info.deliveries is not None:
        fields.append(("deliveries", str(info.deliveries)))
    if info.parents:  # docs/workflows.md
        fields.append(("parents", ", ".join(f"{p} ({s})" for p, s in info.parents.items())))
    if info.children:
        fields.append(("children", ", ".join(info.children)))
    if info.progress is not None:  # reported by its handler (docs/results.md#progress)
        fields.append(("progress", msgspec.json.encode(info.progress).decode()))
    return JobView(id=info.id, topic=info.topic, state=info.state, fields=fields,
                   body=body_text(info.body), headers=sorted(info.headers.items()),
                   error=info.error, actions=ACTIONS_BY_STATE.get(info.state, ()))


@dataclass(frozen=True)
class JobRow:
    """One line of a job list."""

    id: str
    topic: str
    state: str
    due: str
    due_in: str
    attempts: str
    consumer: str
    error: str


@dataclass(frozen=True)
class PageView:
    """A page of a job list and the link parameters of the next one."""

    rows: list[JobRow] = field(default_factory=list)
    next_cursor: str | None = None
    total: int | None = None  # jobs in this state (and topic) now, from the counts


def total_of(stats: QueueStats, state: str, topic: str | None) -> int | None:
    """How many jobs of ``state`` (of ``topic``) the queue's counts hold now (None: unknown)."""
    rows = [t for name, t in stats.topics.items() if not topic or name == topic]
    if state not in ("delayed", "ready", "reserved", "dead", "waiting"):
        return None
    return sum(int(getattr(t, state)) for t in rows)


def _when(info: JobInfo) -> int:
    """The time a list row shows: when a dead job died, else its due time."""
    return info.died if info.died is not None else info.due


def error_head(text: str, chars: int) -> str:
    """At most ``chars`` of an error, cut at the end of a line (an error's first line longer
    than that: cut there); an error keeps its innermost frames first (docs/reliability.md)."""
    if len(text) <= chars:
        return text
    end = text.rfind("\n", 0, chars + 1)
    return text[:end] if end > 0 else text[:chars]


def page_view(page: JobPage, now_ms: int, total: int | None = None) -> PageView:
    """The rows of one ``q.jobs`` page (in its order), the cursor of the next and the total
    of the list."""
    rows = [JobRow(id=j.id, topic=j.topic, state=j.state,
                   # a waiting job has no due time until its parents end (docs/workflows.md);
                   # a dead one shows when it died (the column's title says so)
                   due=moment(_when(j)) if j.state != "waiting" else "after its parents",
                   due_in=relative(_when(j), now_ms) if j.state != "waiting" else "",
                   attempts=f"{j.attempts}/{j.max_attempts}",
                   consumer=j.consumer or "", error=error_head(j.error or "", ERROR_CHARS))
            for j in page.jobs]
    return PageView(rows, page.cursor, total)
