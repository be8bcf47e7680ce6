"""The targets of issues 5 and 16, judged from the figures the benchmarks of one run export.

Each target is a ``Check`` (met, NOT met, or not measured when a figure it needs is missing:
a target with no data is never "met"); a miss points to the "What bounds the figures" part of
``docs/benchmarks.md``, which says what bounds it with this run's figures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from benchmarks.core.harness import Check, measured

BOUNDS = " - what bounds it: [What bounds the figures](#what-bounds-the-figures)"
SINGLE_MIN, SINGLE_RATIO_MIN = 8_000, 0.8
MANY_MIN = 100_000
ASYNC_MIN = 30_000
DRAIN_MIN = 20_000
SCALING = 1.2  # "scaling with 2 processes": 2 processes at least 1.2x the jobs/s of one
DISPATCH_MIN = 250_000
LATENESS_P99_MS = {200: 2.0, 2000: 2.0, 20000: 50.0}
PER_CORE_RATES = (20000,)  # issue 16: measured with as many worker processes as cores (run_all)
NEVER_EARLY_SOURCES = ("e2e", *(str(rate) for rate in LATENESS_P99_MS))
MEMORY_MAX_B = 250
FLAT_MAX = 1.5
CALL_BOUND_US = 1_000  # "~1 ms" per script call, applied as 1,000 µs for the median call


def get(figures: Mapping[str, float], name: str) -> float:
    """A figure of the run, NaN when the run did not produce it."""
    value = figures.get(name, math.nan)
    return float(value) if isinstance(value, int | float) else math.nan


def rate(value: float) -> str:
    """A jobs/s figure."""
    return f"{value:,.0f}/s" if measured(value) else "no figure"


def number(value: float, spec: str = ".2f") -> str:
    """A figure in ``spec``, ``no figure`` when the run has none."""
    return format(value, spec) if measured(value) else "no figure"


def ratio(a: float, b: float) -> float:
    """a / b, NaN when either is missing or b is 0."""
    return a / b if measured(a, b) and b else math.nan


def judge(text: str, met: bool, figure: str, *needed: float) -> Check:
    """The check; not measured when a needed figure is missing."""
    if not measured(*needed):
        return Check(text, None, figure)
    return Check(text, met, figure if met else figure + BOUNDS)


def issue_targets(figures: dict[str, float], full: bool) -> dict[str, Check]:
    """Every issue-5 target by key: met, NOT met or not measured, with the figure measured."""
    f = figures
    found: dict[str, Check] = {}
    single, share = get(f, "enqueue_single"), get(f, "enqueue_single_ratio")
    found["single"] = judge(
        f"enqueue one call per job >= {SINGLE_MIN / 1000:g}k/s (>= {SINGLE_RATIO_MIN:.0%} of a "
        "raw redis-py single-command round trip in the same run)",
        single >= SINGLE_MIN and share >= SINGLE_RATIO_MIN,
        f"{rate(single)}, {number(share * 100, '.0f')}% of the raw `ZADD` round trip",
        single, share)
    many = get(f, "enqueue_many")
    found["many"] = judge(f"enqueue_many >= {MANY_MIN / 1000:g}k jobs/s", many >= MANY_MIN,
                          rate(many), many)
    conc, callers = get(f, "enqueue_async"), get(f, "enqueue_callers")
    found["async"] = judge(f"AsyncQueue with concurrent callers >= {ASYNC_MIN / 1000:g}k/s",
                           conc >= ASYNC_MIN, f"{rate(conc)} ({number(callers, '.0f')} callers)",
                           conc)
    for jobs in (10_000, 100_000):
        one, two = get(f, f"drain_{jobs}_1p"), get(f, f"drain_{jobs}_2p")
        found[f"drain_{jobs}"] = judge(
            f"drain of {jobs // 1000}k jobs due at once >= {DRAIN_MIN / 1000:g}k jobs/s end to "
            "end with one worker process (async no-op handler, concurrency 64)",
            one >= DRAIN_MIN, rate(one), one)
        found[f"scaling_{jobs}"] = judge(
            f"drain of {jobs // 1000}k jobs: scaling with 2 processes (>= {SCALING:g}x one "
            "process)", two >= SCALING * one,
            f"{rate(two)} with two, {number(ratio(two, one))}x", one, two)
    alone = get(f, "dispatch_alone")
    found["dispatch"] = judge(f"dispatch alone >= {DISPATCH_MIN / 1000:g}k jobs/s promoted",
                              alone >= DISPATCH_MIN, rate(alone), alone)
    for per_second, limit in LATENESS_P99_MS.items():
        p99 = get(f, f"lateness_p99_{per_second}")
        found[f"lateness_{per_second}"] = judge(
            f"lateness p99 <= {limit:g} ms at {per_second:,} due/s", p99 <= limit,
            f"p99 {number(p99)} ms, "
            + ("a worker process per core" if per_second in PER_CORE_RATES
               else "one worker process"), p99)
    found["never_early"] = never_early(f)
    memory, backlog = get(f, "memory_per_job"), get(f, "backlog_large")
    found["memory"] = judge(
        f"Redis memory <= {MEMORY_MAX_B} bytes per delayed job with a ~100 B body",
        memory <= MEMORY_MAX_B,
        f"{number(memory, '.0f')} B per job at a {number(backlog, ',.0f')} backlog", memory)
    found["flat"] = flat_dispatch(f, full)
    left, grew, back = get(f, "memory_left"), get(f, "memory_grew"), get(f, "memory_back")
    found["memory_back"] = judge(
        "memory back to baseline after the backlog drains", back == 1.0,
        f"{number(left, '+,.0f')} B vs baseline after a backlog that took "
        f"{number(grew / 1e6, '.1f')} MB", left, grew, back)
    return found


def never_early(f: dict[str, float]) -> Check:
    """No job started or promoted before its due time, in every run that handled jobs; not
    measured when a run is missing or handled nothing (a sum over nothing proves nothing)."""
    handled = [get(f, f"handled_{source}") for source in NEVER_EARLY_SOURCES]
    early = [get(f, f"early_{source}") for source in NEVER_EARLY_SOURCES]
    earliest = [get(f, f"min_lateness_{source}") for source in NEVER_EARLY_SOURCES]
    text = "never early"
    if not measured(*handled, *early, *earliest) or min(handled) <= 0:
        missing = [s for s, h in zip(NEVER_EARLY_SOURCES, handled, strict=True)
                   if not measured(h) or h <= 0]
        return Check(text, None, f"no handled jobs from the run(s) {', '.join(missing)}")
    return judge(text, sum(early) == 0,
                 f"{sum(early):.0f} of {sum(handled):,.0f} jobs started or promoted before due; "
                 f"earliest start {min(earliest):+.2f} ms vs due")


def flat_dispatch(f: dict[str, float], full: bool) -> Check:
    """Dispatch cost (Redis CPU and wall time per promoted job) within FLAT_MAX over the backlog."""
    small, large = get(f, "backlog_cpu_small"), get(f, "backlog_cpu_large")
    wall_small, wall_large = get(f, "backlog_wall_small"), get(f, "backlog_wall_large")
    span = f"{number(get(f, 'backlog_small'), ',.0f')} to {number(get(f, 'backlog_large'), ',.0f')}"
    return judge(
        f"dispatch cost flat (within {FLAT_MAX:g}x) from a 10k to a {'10M' if full else '1M'} "
        f"delayed backlog{'' if full else ' (10M in `make bench-full`)'}",
        large <= FLAT_MAX * small and wall_large <= FLAT_MAX * wall_small,
        f"{span}: Redis CPU {number(small, '.1f')} -> {number(large, '.1f')} µs per promoted job "
        f"({number(ratio(large, small))}x), wall {number(wall_small, '.1f')} -> "
        f"{number(wall_large, '.1f')} µs ({number(ratio(wall_large, wall_small))}x)",
        small, large, wall_small, wall_large)
