"""The prose of ``docs/benchmarks.md``: how to read the tables and what bounds each figure.

The prose itself is markdown in ``docs/benchmarks-report/`` (``header.md``, ``intro.md``,
``summary.md``, ``bounds.md``, ``layout.md``, ``history.md``, ``history-sections.md``); this
module reads it and fills its ``{placeholders}`` with ``fill()`` from one run's figures
(``Section.figures``), its judged targets (``targets.issue_targets``) and the code's own
settings (batch sizes, targets). The
fragments hold no figures; a figure the run did not produce reads "not measured". Figures from
earlier profiling sessions live in ``history.md`` only, each quoted with its date and run, under
a heading that says they are not this run's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from benchmarks.core import targets
from benchmarks.core.fragments import fill, fragment, heading_and_body
from benchmarks.core.harness import BODY, NOT_MEASURED, Check, measured
from benchmarks.core.targets import CALL_BOUND_US
from streamdelay.client.enqueuing import ENQUEUE_BATCH
from streamdelay.dispatch.dispatcher import PROMOTE_BATCH

INTRO = fragment("intro.md") + "\n"
ANALYSIS_HEADING, _BOUNDS = heading_and_body(fragment("bounds.md"))
ANALYSIS_LEAD, _, _BULLETS = _BOUNDS.partition("\n\n")
NOTES: tuple[str, ...] = tuple(line[2:] for line in _BULLETS.splitlines() if line.startswith("- "))
HISTORY_HEADING, _HISTORY = heading_and_body(fragment("history.md"))
HISTORY = _HISTORY + "\n"
HISTORY_SECTIONS = fragment("history-sections.md") + "\n"
SUMMARY = fragment("summary.md")
HEADER = fragment("header.md")
LAYOUT = fragment("layout.md")


def _fmt(value: float, spec: str) -> str:
    return format(value, spec) if measured(value) else NOT_MEASURED


def _per_call_us(per_second: float) -> float:
    return 1e6 / per_second if measured(per_second) and per_second > 0 else math.nan


def drain_curve(figures: Mapping[str, float]) -> str:
    """The 100k drain's jobs/s for each worker-process count the run measured."""
    counts = sorted(int(key.split("_")[2][:-1]) for key in figures
                    if key.startswith("drain_100000_") and key.endswith("p"))
    if not counts:
        return NOT_MEASURED
    return ", ".join(f"{n} process{'es' if n > 1 else ''} {figures[f'drain_100000_{n}p']:,.0f}/s"
                     for n in counts)


def fill_values(figures: Mapping[str, float], checks: Mapping[str, Check],
                info: Mapping[str, str]) -> dict[str, str]:
    """Every placeholder's text, from this run's figures, judged targets and the code."""
    def g(name: str) -> float:
        return targets.get(figures, name)

    single, single_raw = g("enqueue_single"), g("enqueue_single_raw")
    many, many_redis = g("enqueue_many"), g("enqueue_many_redis_us")
    one, two = g("drain_10000_1p"), g("drain_10000_2p")
    drain_redis = g("drain_10000_1p_redis_us")
    values = {
        "cores": _fmt(g("cores"), ".0f"), "load": _fmt(g("load_1m"), ".2f"),
        "redis": info.get("redis", NOT_MEASURED),
        "lateness_rate_low": "200", "lateness_rate_mid": "2,000", "lateness_rate_high": "20,000",
        "target_low": f"{targets.LATENESS_P99_MS[200]:g}",
        "target_mid": f"{targets.LATENESS_P99_MS[2000]:g}",
        "target_high": f"{targets.LATENESS_P99_MS[20000]:g}",
        "ping_p99": _fmt(g("ping_p99"), ".2f"),
        "target_single_rate": f"{targets.SINGLE_MIN:,}",
        "target_single_ratio": f"{targets.SINGLE_RATIO_MIN:.0%}",
        "single_rate": _fmt(single, ",.0f"), "single_raw": _fmt(single_raw, ",.0f"),
        "single_ratio": _fmt(g("enqueue_single_ratio") * 100, ".0f") + " %",
        "single_held_ratio": _fmt(g("enqueue_single_held_ratio") * 100, ".0f") + " %",
        "single_us": _fmt(_per_call_us(single), ".0f"),
        "single_raw_us": _fmt(_per_call_us(single_raw), ".0f"),
        "single_redis_us": _fmt(g("enqueue_single_redis_us"), ".1f"),
        "single_raw_redis_us": _fmt(g("enqueue_single_raw_redis_us"), ".1f"),
        "single_rounds": _fmt(g("enqueue_single_rounds"), ".0f"),
        "many_rounds": _fmt(g("enqueue_many_rounds"), ".0f"),
        "single_budget_us": _fmt(_per_call_us(single_raw * targets.SINGLE_RATIO_MIN), ".0f"),
        "single_gap_us": _fmt(_per_call_us(single)
                              - _per_call_us(single_raw * targets.SINGLE_RATIO_MIN), ".0f"),
        "target_many": f"{targets.MANY_MIN:,}", "many_rate": _fmt(many, ",.0f"),
        "many_us": _fmt(_per_call_us(many), ".1f"), "many_redis_us": _fmt(many_redis, ".1f"),
        "many_target_us": f"{1e6 / targets.MANY_MIN:g}",
        "many_redis_cap": _fmt(_per_call_us(many_redis), ",.0f"),
        "many_raw": _fmt(g("enqueue_many_raw"), ",.0f"),
        "target_async": f"{targets.ASYNC_MIN:,}", "async_rate": _fmt(g("enqueue_async"), ",.0f"),
        "callers": _fmt(g("enqueue_callers"), ".0f"),
        "async_ratio": _fmt(targets.ratio(g("enqueue_async"), g("enqueue_async_raw")), ".2f")
        + "x", "async_raw": _fmt(g("enqueue_async_raw"), ",.0f"),
        "async_redis_us": _fmt(g("enqueue_async_redis_us"), ".1f"),
        "target_dispatch": f"{targets.DISPATCH_MIN:,}",
        "dispatch_rate": _fmt(g("dispatch_alone"), ",.0f"),
        "dispatch_redis_us": _fmt(g("dispatch_alone_redis_us"), ".1f"),
        "dispatch_redis_cap": _fmt(_per_call_us(g("dispatch_alone_redis_us")), ",.0f"),
        "dispatch_target_us": f"{1e6 / targets.DISPATCH_MIN:g}",
        "dispatch_raw": _fmt(g("dispatch_alone_raw"), ",.0f"),
        "promote_batch": f"{PROMOTE_BATCH}", "enqueue_batch": f"{ENQUEUE_BATCH}",
        "flat_max": f"{targets.FLAT_MAX:g}",
        "backlog_cpu_small": _fmt(g("backlog_cpu_small"), ".1f"),
        "backlog_cpu_large": _fmt(g("backlog_cpu_large"), ".1f"),
        "backlog_cpu_ratio": _fmt(targets.ratio(g("backlog_cpu_large"), g("backlog_cpu_small")),
                                  ".2f"),
        "backlog_small": _fmt(g("backlog_small"), ",.0f"),
        "backlog_large": _fmt(g("backlog_large"), ",.0f"),
        "call_bound_us": f"{CALL_BOUND_US:,}",
        "call_promote_us": _fmt(g("call_median_us_promoteDue"), ",.0f"),
        "call_enqueue_us": _fmt(g("call_median_us_enqueueJobs"), ",.0f"),
        "target_drain": f"{targets.DRAIN_MIN:,}", "drain_one": _fmt(one, ",.0f"),
        "drain_two": _fmt(two, ",.0f"), "drain_raw": _fmt(g("drain_10000_raw"), ",.0f"),
        "drain_scaling": _fmt(targets.ratio(two, one), ".2f"), "scaling": f"{targets.SCALING:g}",
        "drain_redis_us": _fmt(drain_redis, ".1f"),
        "drain_100k_one": _fmt(g("drain_100000_1p"), ",.0f"),
        "drain_100k_scaling": _fmt(targets.ratio(g("drain_100000_2p"), g("drain_100000_1p")),
                                   ".2f"),
        "drain_curve": drain_curve(figures),
        "target_drain_jobs_small": "10,000", "target_drain_jobs_big": "100,000",
        "drain_redis_cores": _fmt(drain_redis * one / 1e6, ".2f"),
        "target_memory": f"{targets.MEMORY_MAX_B}", "body_bytes": f"{len(json.dumps(BODY))}",
        "memory_per_job": _fmt(g("memory_per_job"), ".0f"),
        "record_bytes": _fmt(g("record_bytes"), ".0f"),
        "memory_raw_floor": _fmt(g("memory_raw_floor"), ".0f"),
        "memory_overhead": _fmt(g("memory_per_job") - g("memory_raw_floor"), "+.0f"),
        "memory_left": _fmt(g("memory_left"), "+,.0f"),
        "memory_grew": _fmt(g("memory_grew") / 1e6, ".1f"),
    }
    for rate in targets.LATENESS_P99_MS:
        values[f"p99_{rate}"] = _fmt(g(f"lateness_p99_{rate}"), ".2f")
        values[f"steady_{rate}"] = _fmt(g(f"steady_p99_{rate}"), ".2f")
        values[f"promote_{rate}"] = _fmt(g(f"promote_p99_{rate}"), ".2f")
        values[f"pickup_{rate}"] = _fmt(g(f"pickup_p99_{rate}"), ".2f")
    for key, check in checks.items():
        values[f"verdict_{key}"] = f"**{check.state}**"
    values.setdefault("verdict_calls", f"**{NOT_MEASURED}**")
    return values


def intro(values: Mapping[str, str]) -> str:
    """How to read the report, with this run's machine and load."""
    return fill(INTRO, values)


def analysis(values: Mapping[str, str]) -> str:
    """"What bounds the figures": one bullet per target, every figure and verdict this run's."""
    bullets = "\n".join(f"- {fill(note, values)}" for note in NOTES)
    return f"{ANALYSIS_HEADING}\n\n{fill(ANALYSIS_LEAD, values)}\n\n{bullets}\n"


def history(peers: str) -> str:
    """The dated figures of earlier runs: the profiles, the sections measured apart from a run
    (``history-sections.md``), and the peers section of the last ``make bench-peers`` (it carries
    its own date)."""
    return f"{HISTORY_HEADING}\n\n{HISTORY}\n{HISTORY_SECTIONS}\n{peers}"
