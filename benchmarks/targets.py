"""The targets of issue 5, judged from the figures the benchmarks of one run export.

Each target is ``(text, met, measured figure)``; a miss also points to the "What bounds the
figures" part of ``docs/benchmarks.md``, which says what bounds it (with the profile).
"""

from __future__ import annotations

import math

BOUNDS = " - what bounds it: [What bounds the figures](#what-bounds-the-figures-profiles)"
SCALING = 1.2  # "scaling with 2 processes": 2 processes at least 1.2x the jobs/s of one


def _k(value: float) -> str:
    return f"{value:,.0f}/s"


def _get(figures: dict[str, float], name: str) -> float:
    return figures.get(name, math.nan)


def issue_targets(figures: dict[str, float], full: bool) -> list[tuple[str, bool, str]]:
    """Every issue-5 target: text, met, the figure measured (plus the bound when missed)."""
    found: list[tuple[str, bool, str]] = []

    def add(text: str, met: bool, figure: str) -> None:
        found.append((text, met, figure if met else figure + BOUNDS))

    single, ratio = _get(figures, "enqueue_single"), _get(figures, "enqueue_single_ratio")
    add("enqueue one call per job >= 8k/s (>= 80% of a raw redis-py single-command round trip "
        "in the same run)", single >= 8000 and ratio >= 0.8,
        f"{_k(single)}, {ratio:.0%} of the raw `ZADD` round trip")
    many = _get(figures, "enqueue_many")
    add("enqueue_many >= 100k jobs/s", many >= 100_000, _k(many))
    conc = _get(figures, "enqueue_async")
    add("AsyncQueue with concurrent callers >= 20k/s", conc >= 20_000, f"{_k(conc)} (100 callers)")
    for jobs in (10_000, 100_000) if full else (10_000,):
        one = _get(figures, f"drain_{jobs}_1p")
        add(f"drain of {jobs // 1000}k jobs due at once >= 10k jobs/s end to end with one worker "
            "process (async no-op handler, concurrency 64)", one >= 10_000, _k(one))
        two = _get(figures, f"drain_{jobs}_2p")
        add(f"drain of {jobs // 1000}k jobs: scaling with 2 processes (>= {SCALING:g}x one "
            "process)", two >= SCALING * one, f"{_k(two)} with 2, {two / one:.2f}x")
    alone = _get(figures, "dispatch_alone")
    add("dispatch alone >= 250k jobs/s promoted", alone >= 250_000, _k(alone))
    for rate, limit in ((200, 2.0), (2000, 10.0), (20000, 50.0)):
        p99 = _get(figures, f"lateness_p99_{rate}")
        add(f"lateness p99 <= {limit:g} ms at {rate:,} due/s", p99 <= limit,
            f"p99 {p99:.2f} ms, 1 worker process")
    early = sum(v for k, v in figures.items() if k.startswith("early_"))
    earliest = min((v for k, v in figures.items() if k.startswith("min_lateness_")),
                   default=math.nan)
    add("never early", early == 0, f"{early:.0f} jobs started or promoted before due; earliest "
        f"start {earliest:+.2f} ms vs due")
    memory = _get(figures, "memory_per_job")
    add("Redis memory <= 250 bytes per delayed job with a ~100 B body", memory <= 250,
        f"{memory:.0f} B per job at a {_get(figures, 'backlog_large'):,.0f} backlog")
    small, large = _get(figures, "backlog_cpu_small"), _get(figures, "backlog_cpu_large")
    wall_small, wall_large = (_get(figures, "backlog_wall_small"),
                              _get(figures, "backlog_wall_large"))
    span = f"{_get(figures, 'backlog_small'):,.0f} to {_get(figures, 'backlog_large'):,.0f}"
    add(f"dispatch cost flat (within 1.5x) from a 10k to a {'10M' if full else '1M'} delayed "
        f"backlog{'' if full else ' (10M in `make bench-full`)'}",
        large <= 1.5 * small and wall_large <= 1.5 * wall_small,
        f"{span}: Redis CPU {small:.1f} -> {large:.1f} µs per promoted job "
        f"({large / small:.2f}x), wall {wall_small:.1f} -> {wall_large:.1f} µs "
        f"({wall_large / wall_small:.2f}x)")
    left, grew = _get(figures, "memory_left"), _get(figures, "memory_grew")
    add("memory back to baseline after the backlog drains", _get(figures, "memory_back") == 1.0,
        f"{left:+,.0f} B vs baseline after a backlog that took {grew / 1e6:.1f} MB")
    return found
