"""The dashboard's small lateness chart: inline SVG built on the server (no script, no CDN).

Lateness spans half a millisecond to a minute, so the y axis is logarithmic; one point per
minute, p50 and p99 as two lines, a minute without handler starts as a gap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

FLOOR_MS = 0.1  # the bottom of the y axis
CEIL_MS = 60_000.0  # the top: the last lateness bucket


def _y(ms: float, height: float) -> float:
    """The y of ``ms`` on a log axis from FLOOR_MS (bottom) to CEIL_MS (top)."""
    clamped = min(max(ms, FLOOR_MS), CEIL_MS)
    span = math.log10(CEIL_MS) - math.log10(FLOOR_MS)
    return round(height - (math.log10(clamped) - math.log10(FLOOR_MS)) / span * height, 1)


def _segments(values: Sequence[float | None], width: float, height: float) -> list[str]:
    """SVG ``points`` of each run of known values (a None breaks the line)."""
    step = width / max(len(values) - 1, 1)
    runs: list[list[str]] = [[]]
    for i, value in enumerate(values):
        if value is None:
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(f"{round(i * step, 1)},{_y(value, height)}")
    return [" ".join(run) for run in runs if run]


def lateness_chart(p50: Sequence[float | None], p99: Sequence[float | None], *,
                   width: int = 160, height: int = 40, title: str = "") -> str:
    """An inline ``<svg>`` of per-minute p50 (solid) and p99 (dashed) lateness, ms; a single
    point is drawn as a dot."""
    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" '
             f'height="{height}" role="img" aria-label="{escape(title or "lateness chart")}">']
    if title:
        parts.append(f"<title>{escape(title)}</title>")
    for ms in (1.0, 1000.0):  # guide lines at 1 ms and 1 s
        y = _y(ms, height)
        parts.append(f'<line class="guide" x1="0" y1="{y}" x2="{width}" y2="{y}"/>')
    for css, values in (("p99", p99), ("p50", p50)):
        for points in _segments(values, width, height):
            if " " in points:
                parts.append(f'<polyline class="{css}" points="{points}"/>')
            else:
                cx, cy = points.split(",")
                parts.append(f'<circle class="{css}" cx="{cx}" cy="{cy}" r="1.8"/>')
    parts.append("</svg>")
    return "".join(parts)


# --- the queue page's charts: axes and labels, readable at a glance ---------------------------

TICKS_MS = ((1.0, "1 ms"), (10.0, "10 ms"), (100.0, "100 ms"), (1000.0, "1 s"),
            (10_000.0, "10 s"))
SERIES = (("started", "started"), ("ok", "succeeded"), ("retried", "retried"),
          ("dead", "dead"))
_LEFT, _BOTTOM, _TOP = 52, 20, 8  # margins for the axis labels


def _frame(width: int, height: int, title: str, css: str) -> list[str]:
    return [f'<svg class="chart big {css}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">',
            f"<title>{escape(title)}</title>"]


def _ago(minutes: int) -> str:
    """``-14 min``, ``-24 h``, ``-7 d``: how long ago; hours from 2 h, days from 2 days,
    rounded (an axis label)."""
    if minutes >= 2 * 1440:
        return f"-{round(minutes / 1440)} d"
    if minutes >= 120:
        return f"-{round(minutes / 60)} h"
    return f"-{minutes} min"


def _x_labels(count: int, width: int, height: int, step: int = 1) -> list[str]:
    """Time ago under the x axis (points ``step`` minutes apart): the oldest, the middle,
    now."""
    plot = width - _LEFT - 8
    out = []
    for index, anchor in ((0, "start"), (count // 2, "middle"), (count - 1, "end")):
        x = _LEFT + round(index * plot / max(count - 1, 1), 1)
        ago = count - 1 - index
        label = "now" if ago == 0 else _ago(ago * step)
        out.append(f'<text class="axis" x="{x}" y="{height - 5}" text-anchor="{anchor}">'
                   f"{label}</text>")
    return out


def lateness_panel(p50: Sequence[float | None], p99: Sequence[float | None], *,
                   width: int = 560, height: int = 200, title: str = "") -> str:
    """The queue page's lateness chart: p50 (solid) and p99 (dashed) per minute, ms on a log
    axis labelled 1 ms … 10 s, minutes ago on the x axis."""
    plot_h = height - _BOTTOM - _TOP
    plot_w = width - _LEFT - 8
    parts = _frame(width, height, title or "lateness per minute", "lateness")
    for ms, label in TICKS_MS:
        y = _TOP + _y(ms, plot_h)
        parts.append(f'<line class="guide" x1="{_LEFT}" y1="{y}" x2="{width - 8}" y2="{y}"/>')
        parts.append(f'<text class="axis" x="{_LEFT - 6}" y="{y + 4}" text-anchor="end">'
                     f"{label}</text>")
    for css, values in (("p99", p99), ("p50", p50)):
        for points in _segments(values, plot_w, plot_h):
            moved = " ".join(f"{float(x) + _LEFT:.1f},{float(y) + _TOP:.1f}"
                             for x, y in (p.split(",") for p in points.split(" ")))
            if " " in moved:
                parts.append(f'<polyline class="{css}" points="{moved}"/>')
            else:
                cx, cy = moved.split(",")
                parts.append(f'<circle class="{css}" cx="{cx}" cy="{cy}" r="2.5"/>')
    parts += _x_labels(len(p50), width, height)
    parts.append("</svg>")
    return "".join(parts)


def _nice(top: int) -> int:
    """A round axis maximum at or above ``top`` (1, 2, 5 times 10^n)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= top:
                return step * factor
        step *= 10


def throughput_panel(series: dict[str, list[int]], *, width: int = 560, height: int = 160,
                     title: str = "", step: int = 1) -> str:
    """The queue page's throughput chart: per minute (per ``step`` minutes), handler starts
    and deliveries settled ok, retried and dead, one line each (a series absent from
    ``series`` is not drawn), with the axis maximum labelled. The totals are in ``data-*``
    attributes (the browser test reads them)."""
    unit = {1: "/min", 60: "/h", 1440: "/d"}.get(step, f"/{step} min")
    count = max((len(v) for v in series.values()), default=0)
    top = _nice(max((max(v, default=0) for v in series.values()), default=0) or 1)
    plot_h = height - _BOTTOM - _TOP
    plot_w = width - _LEFT - 8
    totals = " ".join(f'data-{name}="{sum(series.get(name, []))}"' for name, _ in SERIES)
    parts = _frame(width, height, title or "throughput per minute", "throughput")
    parts[0] = parts[0][:-1] + f" {totals}>"
    for value in (top, top // 2, 0) if top > 1 else (top, 0):
        y = _TOP + round(plot_h - value / top * plot_h, 1)
        parts.append(f'<line class="guide" x1="{_LEFT}" y1="{y}" x2="{width - 8}" y2="{y}"/>')
        parts.append(f'<text class="axis" x="{_LEFT - 6}" y="{y + 4}" text-anchor="end">'
                     f"{value}{unit}</text>")
    dx = plot_w / max(count - 1, 1)
    for name, _ in SERIES:
        values = series.get(name, [])
        points = " ".join(f"{_LEFT + i * dx:.1f},{_TOP + plot_h - v / top * plot_h:.1f}"
                          for i, v in enumerate(values))
        if points:
            parts.append(f'<polyline class="flow {name}" points="{points}"/>')
    parts += _x_labels(count, width, height, step)
    parts.append("</svg>")
    return "".join(parts)
