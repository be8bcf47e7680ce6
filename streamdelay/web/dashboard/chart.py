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
