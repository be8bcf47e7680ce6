"""The targets of issues 5 and 16, judged from the figures the benchmarks of one run export.

Each target is a ``Check`` (met, NOT met, or not measured when a figure it needs is missing:
a target with no data is never "met"); a miss points to the "What bounds the figures" part of
``docs/benchmarks.md``, which says what bounds it with this run's figures. The words of each
target and of its figure are in ``docs/benchmarks-report/targets.md``; the bounds and the
figures come from here and from the run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from benchmarks.core.fragments import fill, keyed
from benchmarks.core.harness import Check, measured

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
DRAIN_JOBS = (10_000, 100_000)
DRAIN_CONCURRENCY = 64  # the bench worker's (harness.Workers)
BACKLOG_SMALL, BACKLOG_LARGE, BACKLOG_FULL = 10_000, 1_000_000, 10_000_000  # dispatch.backlog
BODY_APPROX_B = 100  # harness.BODY as JSON, about
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


def words(key: str, **values: object) -> str:
    """The words of ``key`` in ``docs/benchmarks-report/targets.md``, filled with ``values``."""
    return fill(keyed("targets.md")[key], {name: str(value) for name, value in values.items()})


def judge(text: str, met: bool, figure: str, *needed: float) -> Check:
    """The check; not measured when a needed figure is missing."""
    if not measured(*needed):
        return Check(text, None, figure)
    return Check(text, met, figure if met else f"{figure} {words('bounds')}")


def thousands(n: float) -> str:
    """10000 -> "10k", 1000000 -> "1M"."""
    return f"{n / 1e6:g}M" if n >= 1e6 else f"{n / 1000:g}k"


def issue_targets(figures: dict[str, float], full: bool) -> dict[str, Check]:
    """Every issue-5 target by key: met, NOT met or not measured, with the figure measured."""
    f = figures
    found: dict[str, Check] = {}
    single, share = get(f, "enqueue_single"), get(f, "enqueue_single_ratio")
    found["single"] = judge(
        words("single", single_min=thousands(SINGLE_MIN),
              single_ratio_min=f"{SINGLE_RATIO_MIN:.0%}"),
        single >= SINGLE_MIN and share >= SINGLE_RATIO_MIN,
        words("single.figure", single=rate(single), share=number(share * 100, ".0f")),
        single, share)
    many = get(f, "enqueue_many")
    found["many"] = judge(words("many", many_min=thousands(MANY_MIN)), many >= MANY_MIN,
                          rate(many), many)
    conc, callers = get(f, "enqueue_async"), get(f, "enqueue_callers")
    found["async"] = judge(words("async", async_min=thousands(ASYNC_MIN)), conc >= ASYNC_MIN,
                           words("async.figure", rate=rate(conc), callers=number(callers, ".0f")),
                           conc)
    for jobs in DRAIN_JOBS:
        one, two = get(f, f"drain_{jobs}_1p"), get(f, f"drain_{jobs}_2p")
        found[f"drain_{jobs}"] = judge(
            words("drain", jobs=thousands(jobs), drain_min=thousands(DRAIN_MIN),
                  concurrency=DRAIN_CONCURRENCY), one >= DRAIN_MIN, rate(one), one)
        found[f"scaling_{jobs}"] = judge(
            words("scaling", jobs=thousands(jobs), processes=2, scaling=f"{SCALING:g}"),
            two >= SCALING * one,
            words("scaling.figure", two=rate(two), ratio=number(ratio(two, one))), one, two)
    alone = get(f, "dispatch_alone")
    found["dispatch"] = judge(words("dispatch", dispatch_min=thousands(DISPATCH_MIN)),
                              alone >= DISPATCH_MIN, rate(alone), alone)
    for per_second, limit in LATENESS_P99_MS.items():
        p99 = get(f, f"lateness_p99_{per_second}")
        found[f"lateness_{per_second}"] = judge(
            words("lateness", limit=f"{limit:g}", per_second=f"{per_second:,}"), p99 <= limit,
            words("lateness.figure", p99=number(p99), workers=words(
                "lateness.per_core" if per_second in PER_CORE_RATES else "lateness.one")), p99)
    found["never_early"] = never_early(f)
    memory, backlog = get(f, "memory_per_job"), get(f, "backlog_large")
    found["memory"] = judge(
        words("memory", memory_max=MEMORY_MAX_B, body=BODY_APPROX_B), memory <= MEMORY_MAX_B,
        words("memory.figure", memory=number(memory, ".0f"), backlog=number(backlog, ",.0f")),
        memory)
    found["flat"] = flat_dispatch(f, full)
    left, grew, back = get(f, "memory_left"), get(f, "memory_grew"), get(f, "memory_back")
    found["memory_back"] = judge(
        words("memory_back"), back == 1.0,
        words("memory_back.figure", left=number(left, "+,.0f"), grew=number(grew / 1e6, ".1f")),
        left, grew, back)
    return found


def never_early(f: dict[str, float]) -> Check:
    """No job started or promoted before its due time, in every run that handled jobs; not
    measured when a run is missing or handled nothing (a sum over nothing proves nothing)."""
    handled = [get(f, f"handled_{source}") for source in NEVER_EARLY_SOURCES]
    early = [get(f, f"early_{source}") for source in NEVER_EARLY_SOURCES]
    earliest = [get(f, f"min_lateness_{source}") for source in NEVER_EARLY_SOURCES]
    text = words("never_early")
    if not measured(*handled, *early, *earliest) or min(handled) <= 0:
        missing = [s for s, h in zip(NEVER_EARLY_SOURCES, handled, strict=True)
                   if not measured(h) or h <= 0]
        return Check(text, None, words("never_early.missing", missing=", ".join(missing)))
    return judge(text, sum(early) == 0,
                 words("never_early.figure", early=f"{sum(early):.0f}",
                       handled=f"{sum(handled):,.0f}", earliest=f"{min(earliest):+.2f}"))


def flat_dispatch(f: dict[str, float], full: bool) -> Check:
    """Dispatch cost (Redis CPU and wall time per promoted job) within FLAT_MAX over the backlog."""
    small, large = get(f, "backlog_cpu_small"), get(f, "backlog_cpu_large")
    wall_small, wall_large = get(f, "backlog_wall_small"), get(f, "backlog_wall_large")
    not_full = "" if full else " " + words("flat.not_full", full_size=thousands(BACKLOG_FULL))
    return judge(
        words("flat", flat_max=f"{FLAT_MAX:g}", small=thousands(BACKLOG_SMALL),
              large=thousands(BACKLOG_FULL if full else BACKLOG_LARGE), not_full=not_full),
        large <= FLAT_MAX * small and wall_large <= FLAT_MAX * wall_small,
        words("flat.figure", backlog_small=number(get(f, "backlog_small"), ",.0f"),
              backlog_large=number(get(f, "backlog_large"), ",.0f"),
              cpu_small=number(small, ".1f"), cpu_large=number(large, ".1f"),
              cpu_ratio=number(ratio(large, small)), wall_small=number(wall_small, ".1f"),
              wall_large=number(wall_large, ".1f"),
              wall_ratio=number(ratio(wall_large, wall_small))),
        small, large, wall_small, wall_large)
