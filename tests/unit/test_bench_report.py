"""The benchmark report (``make bench``) says only what its own run measured (no benchmark runs
here: the report generator is fed result sets directly).

Every number and every met / NOT met in the generated prose comes from the run's figures; a
target or check with no figure reads "not measured" and makes ``make bench`` exit non-zero.
"""

from __future__ import annotations

import math
import re

import pytest

from benchmarks.core import fragments, report_notes, targets
from benchmarks.core.harness import NOT_MEASURED, Check, Section
from benchmarks.core.report import dropped_sections, exit_code, report
from benchmarks.core.targets import CALL_BOUND_US
from benchmarks.micro.dispatch import script_call_check
from streamdelay.client.enqueuing import ENQUEUE_BATCH
from streamdelay.dispatch.dispatcher import PROMOTE_BATCH

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")
ALLOWED_TOKENS = re.compile(r"\bp(?:50|99)\b")  # percentile names, not figures
INFO = {"redis": "7.0.15", "load_1m": "0.50"}


def full_figures() -> dict[str, float]:
    """A complete result set with odd values no template could hold by chance."""
    f = {"cores": 2.0, "load_1m": 0.5, "enqueue_callers": 100.0}
    f.update({"enqueue_single": 5123.4, "enqueue_single_raw": 9876.5,
              "enqueue_single_ratio": 5123.4 / 9876.5, "enqueue_single_held_ratio": 0.4567,
              "enqueue_single_redis_us": 41.7,
              "enqueue_single_raw_redis_us": 12.3, "enqueue_single_rounds": 21.0,
              "enqueue_many_rounds": 47.0,
              "enqueue_many": 43210.9, "enqueue_many_raw": 123456.7,
              "enqueue_many_ratio": 0.35, "enqueue_many_redis_us": 8.3,
              "enqueue_async": 17345.6, "enqueue_async_raw": 7890.1,
              "enqueue_async_ratio": 2.2, "enqueue_async_redis_us": 9.7})
    f.update({"dispatch_alone": 131313.1, "dispatch_alone_raw": 97531.2,
              "dispatch_alone_redis_us": 6.37, "call_median_us_promoteDue": 913.0,
              "call_median_us_enqueueJobs": 877.0})
    f.update({"backlog_small": 10_000.0, "backlog_large": 1_000_000.0,
              "backlog_cpu_small": 6.13, "backlog_cpu_large": 7.29,
              "backlog_wall_small": 8.41, "backlog_wall_large": 9.57,
              "memory_per_job": 351.0, "memory_per_job_small": 353.0,
              "memory_raw_floor": 347.0, "record_bytes": 161.0})
    f.update({"drain_10000_1p": 11111.0, "drain_10000_2p": 12345.0, "drain_10000_raw": 65432.0,
              "drain_10000_1p_redis_us": 21.9, "drain_10000_2p_redis_us": 23.1})
    f.update({"drain_100000_1p": 21111.0, "drain_100000_2p": 22345.0, "drain_100000_3p": 21345.0,
              "drain_100000_raw": 66432.0, "drain_100000_1p_redis_us": 20.9,
              "drain_100000_2p_redis_us": 22.1, "drain_100000_3p_redis_us": 22.9})
    f.update({"memory_left": 4321.0, "memory_grew": 35_700_000.0, "memory_back": 1.0})
    for rate, base in ((200, 1.71), (2000, 1.88), (20000, 87.3)):
        f.update({f"lateness_p99_{rate}": base, f"steady_p99_{rate}": base + 0.11,
                  f"promote_p99_{rate}": base / 2, f"pickup_p99_{rate}": base / 3,
                  f"handled_{rate}": 1000.0, f"early_{rate}": 0.0,
                  f"min_lateness_{rate}": 0.37})
    f.update({"handled_e2e": 1900.0, "early_e2e": 0.0, "min_lateness_e2e": 0.41,
              "ping_p99": 0.15})
    return f


def sections_for(figures: dict[str, float], times: dict[str, list[int]]) -> list[Section]:
    """One section holding the figures and the script-call check, as ``run_all`` collects."""
    return [Section("all", ["x"], [["1"]], verdicts=[script_call_check(times)],
                    figures=figures)]


def numbers(text: str) -> list[str]:
    """Every number written in ``text`` (thousands separators kept)."""
    return NUMBER.findall(ALLOWED_TOKENS.sub("", text))


def constant_numbers() -> set[str]:
    """Numbers the prose may hold without a run: the targets and the code's own settings."""
    values = report_notes.fill_values({}, {}, {})
    return {n for key, text in values.items() if key.startswith(("target_", "lateness_rate_"))
            or key in {"promote_batch", "enqueue_batch", "call_bound_us", "flat_max",
                       "scaling", "many_target_us", "dispatch_target_us", "body_bytes"}
            for n in numbers(text)}


def prose(text: str) -> str:
    """The report without its tables and its dated History part."""
    text = text[:text.index(report_notes.HISTORY_HEADING)]
    return "\n".join(line for line in text.splitlines() if not line.startswith("|"))


def test_the_prose_templates_hold_no_figures() -> None:
    for template in (report_notes.INTRO, *report_notes.NOTES):
        literal = fragments.PLACEHOLDER.sub("", template)
        assert numbers(literal) == [], (numbers(literal), literal[:200])


def test_without_results_no_figure_appears_and_nothing_is_met() -> None:
    text, unmeasured = report(sections_for({}, {}), dict(INFO), False, 0.0, "")
    body = prose(text)
    notes = body[body.index(report_notes.ANALYSIS_HEADING):]
    strays = [n for n in numbers(notes) if n not in constant_numbers()]
    assert strays == [], strays
    assert "**met**" not in body and "**NOT met**" not in body
    checks = targets.issue_targets({}, False)
    assert all(c.met is None for c in checks.values())
    runs = {str(rate) for rate in targets.LATENESS_P99_MS}  # names of the runs with no data
    for check in [*checks.values(), script_call_check({})]:  # the measured part: no number
        assert {n.rstrip(",") for n in numbers(check.figure)} <= runs, check
    assert {c.name for c in unmeasured} >= {c.name for c in checks.values()}
    assert body.count(f"**{NOT_MEASURED}**") >= len(checks) + len(report_notes.NOTES)
    assert exit_code([], unmeasured) == 1


def test_every_verdict_in_the_notes_is_the_targets_verdict_of_the_same_run() -> None:
    figures = full_figures()
    text, unmeasured = report(sections_for(figures, {"promoteDue": [913] * 3,
                                                     "enqueueJobs": [877]}),
                              dict(INFO), False, 0.0, "")
    assert unmeasured == [] and f"**{NOT_MEASURED}**" not in text
    assert NOT_MEASURED not in report_notes.fill_values(
        figures, targets.issue_targets(figures, False), INFO).values()
    assert exit_code([], unmeasured) == 0
    checks = targets.issue_targets(figures, False)
    analysis = prose(text)[prose(text).index(report_notes.ANALYSIS_HEADING):]
    for key in checks:
        if key == "never_early":
            continue  # judged in the Targets list only
        assert any(f"{{verdict_{key}}}" in note for note in report_notes.NOTES), key
    values = report_notes.fill_values(figures, checks, INFO)
    for key, check in checks.items():
        assert values[f"verdict_{key}"] == f"**{check.state}**"
    # this run's figures are in the notes: lateness p99 at 200/s, drain, memory
    for shown in ("1.71", "1.88", "87.30", "5,123", "11,111", "351", "+4,321", "913"):
        assert shown in analysis, shown
    assert "**NOT met** (p99 87.30 ms" in text  # 20k/s: 87.3 > 50 ms, in the Targets list
    # the verdicts of the notes agree with the Targets list
    assert "**met**, p99 1.71 ms" in analysis and "**NOT met**, p99 87.30 ms" in analysis


def test_a_missing_figure_reads_not_measured_in_the_notes() -> None:
    figures = full_figures()
    for rate in targets.LATENESS_P99_MS:
        del figures[f"lateness_p99_{rate}"]
    text, unmeasured = report(sections_for(figures, {"promoteDue": [913],
                                                     "enqueueJobs": [877]}),
                              dict(INFO), False, 0.0, "")
    assert {c.name for c in unmeasured} == {
        f"lateness p99 <= {limit:g} ms at {rate:,} due/s"
        for rate, limit in targets.LATENESS_P99_MS.items()}
    assert f"p99 {NOT_MEASURED} ms" in prose(text)
    assert exit_code([], unmeasured) == 1


def test_never_early_with_no_lateness_figures_is_not_measured() -> None:
    figures = full_figures()
    for key in [k for k in figures if k.startswith(("early_", "min_lateness_", "handled_"))
                and not k.endswith("e2e")]:
        del figures[key]  # the lateness benchmark produced nothing
    assert targets.issue_targets(figures, False)["never_early"].met is None
    figures = full_figures()
    figures["handled_200"] = 0.0  # it ran but handled no job: a sum over nothing
    check = targets.issue_targets(figures, False)["never_early"]
    assert check.met is None and "200" in check.figure
    assert "+nan" not in str(check)
    figures = full_figures()
    figures["early_2000"] = 2.0
    assert targets.issue_targets(figures, False)["never_early"].met is False
    assert targets.issue_targets(full_figures(), False)["never_early"].met is True


@pytest.mark.parametrize(("times", "met"), [
    ({}, None),  # an empty SLOWLOG judges nothing
    ({"promoteDue": [900, 950, 990]}, None),  # one script without calls
    ({"promoteDue": [900, 950, 990], "enqueueJobs": [800]}, True),
    ({"promoteDue": [900, CALL_BOUND_US + 1, CALL_BOUND_US + 5], "enqueueJobs": [800]}, False),
])
def test_script_call_bound_is_stated_and_needs_data(times: dict[str, list[int]],
                                                    met: bool | None) -> None:
    check = script_call_check(times)
    assert check.met is met
    assert f"<= {CALL_BOUND_US:,} µs" in check.name  # the bound applied, in the report
    assert "nan" not in str(check)


def test_history_is_dated_and_apart() -> None:
    text, _ = report(sections_for(full_figures(), {}), dict(INFO), False, 0.0,
                     "<!-- peers:start -->\n## Peers\n\nMeasured on 2026-11-23\n"
                     "<!-- peers:end -->\n")
    history = text[text.index(report_notes.HISTORY_HEADING):]
    assert text.index(report_notes.ANALYSIS_HEADING) < text.index(report_notes.HISTORY_HEADING)
    assert "## Peers" in history and "## Peers" not in text[:len(text) - len(history)]
    bullets = [line for line in report_notes.HISTORY.splitlines() if line.startswith("- ")]
    assert bullets and all(re.match(r"- \d{4}-\d{2}-\d{2}, ", b) for b in bullets), bullets


def test_constants_in_the_notes_are_the_code_s() -> None:
    values = report_notes.fill_values({}, {}, {})
    assert values["promote_batch"] == str(PROMOTE_BATCH)
    assert values["enqueue_batch"] == str(ENQUEUE_BATCH)
    assert not math.isnan(float(values["many_target_us"]))


def test_checks_render_their_state() -> None:
    assert str(Check("x", None, "no figure")) == "x: **not measured** (no figure)"
    assert str(Check("x", False, "1")) == "x: **NOT met** (1)"


def test_a_section_s_listed_targets_are_in_the_targets_list() -> None:
    """The HTTP section's targets (issue 14) show in the Targets list, not in the other checks;
    one it could not judge still makes the run exit non-zero."""
    listed = [Check("HTTP x >= 1/s", True, "2/s", key="listed-target:x"),
              Check("HTTP y >= 1/s", None, "no figure", key="listed-target:y")]
    sections = [*sections_for(full_figures(), {}), Section("HTTP", ["x"], [["1"]],
                                                           verdicts=listed)]
    text, unmeasured = report(sections, dict(INFO), False, 0.0, "")
    targets_part = text[text.index("## Targets"):text.index("Other checks")]
    others = text[text.index("Other checks"):text.index("\n## ", text.index("Other checks"))]
    assert "HTTP x >= 1/s: **met** (2/s)" in targets_part and "HTTP x" not in others
    assert "HTTP y >= 1/s: **not measured**" in targets_part
    assert exit_code(sections, unmeasured) == 1


def test_the_servers_section_run_alone_replaces_its_own_section_only() -> None:
    from benchmarks.e2e.servers import TITLE, put_section

    doc = ("# Benchmarks\n\n## Enqueue\n\n| 1 |\n\n" + report_notes.ANALYSIS_HEADING
           + "\n\nprose\n")
    first = put_section(doc, f"## {TITLE}\n\n| redis | valkey |\n")
    assert first.index("## Enqueue") < first.index(TITLE) < first.index(
        report_notes.ANALYSIS_HEADING)  # inserted before the analysis
    again = put_section(first, f"## {TITLE}\n\n| newer |\n")
    assert again.count(TITLE) == 1 and "| newer |" in again and "| redis |" not in again
    assert again.replace("| newer |", "| redis | valkey |") == first  # nothing else moved


def test_a_run_names_each_section_of_the_page_it_would_drop() -> None:
    """One run writes the whole page: a section it does not make (measured by hand, say) is
    named, figures in headings aside (docs/benchmarks.md#layout)."""
    old = ("# Benchmarks\n\n## Drain: 10,000 jobs due at once\n\nx\n\n"
           "## Lifecycle events: on against off, same run {#lifecycle-events}\n\ny\n")
    new = "# Benchmarks\n\n## Drain: 1,000 jobs due at once\n\nx\n"
    assert dropped_sections(old, new) == [
        "Lifecycle events: on against off, same run {#lifecycle-events}"]
    assert dropped_sections(old, old) == []
