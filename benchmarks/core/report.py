"""The report writer of ``make bench``: one run's sections and figures -> ``docs/benchmarks.md``.

The words come from ``docs/benchmarks-report/`` (``report_notes``); the figures and verdicts from
the run's sections and ``targets.issue_targets``; the "Peers" section written by
``benchmarks/peers/run.py`` (``make bench-full``) is kept, dated, under the History heading.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path

from benchmarks.core.fragments import fill
from benchmarks.core.harness import LISTED_TARGET, Check, Section
from benchmarks.core.report_notes import (
    HEADER,
    LAYOUT,
    SUMMARY,
    analysis,
    fill_values,
    history,
    intro,
)
from benchmarks.core.targets import issue_targets

PEERS_START, PEERS_END = "<!-- peers:start -->", "<!-- peers:end -->"


def summary(checks: dict[str, Check], sections: list[Section]) -> str:
    """The targets of issue 5, met, NOT met or not measured with the figure, then the other
    checks (guarantees and documented limits) the sections judged."""
    listed = [f"- {check}" for check in checks.values()]
    listed += [f"- {check}" for section in sections for check in section.verdicts
               if check.key.startswith(LISTED_TARGET)]  # judged in their section (HTTP)
    others = [f"- {check}" for section in sections for check in section.verdicts
              if not check.key.startswith(("target:", LISTED_TARGET))]
    text = fill(SUMMARY, {"targets": "\n".join(listed), "other_checks": "\n".join(others)})
    return text + "\n" if others else text


def header(info: dict[str, str], full: bool, minutes: float) -> str:
    """The title, when and how the report was made, and the run's versions and machine."""
    machine = "\n".join(f"- {name}: {value}" for name, value in info.items() if name != "load_1m")
    return fill(HEADER, {"make_target": "bench-full" if full else "bench",
                         "generated_at": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}",
                         "minutes": f"{minutes:.1f}", "machine": machine})


def report(sections: list[Section], info: dict[str, str], full: bool, minutes: float,
           peers: str) -> tuple[str, list[Check]]:
    """The markdown report of one run, and the checks it could not judge (not measured).

    Every figure and verdict in it comes from ``sections`` (this run); the only figures from
    earlier runs are under the History heading, each with its date.
    """
    figures: dict[str, float] = {"cores": float(os.cpu_count() or 0),
                                 "load_1m": float(info.get("load_1m", "nan"))}
    for section in sections:
        figures.update(section.figures)
    checks = issue_targets(figures, full)
    keyed = {**{c.key: c for s in sections for c in s.verdicts if c.key}, **checks}
    values = fill_values(figures, keyed, info)
    body = (header(info, full, minutes) + "\n\n" + intro(values) + "\n"
            + summary(checks, sections) + "\n"
            + "\n".join(s.markdown() for s in sections) + "\n" + analysis(values) + "\n"
            + LAYOUT + "\n\n" + history(peers))
    unmeasured = [c for c in checks.values() if c.met is None]
    unmeasured += [c for s in sections for c in s.verdicts if c.met is None]
    return body, unmeasured


def kept_peers_section(path: Path) -> str:
    """The "Peers" section of the current report (written by ``benchmarks/peers/run.py``)."""
    if not path.exists():
        return ""
    doc = path.read_text()
    start, end = doc.find(PEERS_START), doc.find(PEERS_END)
    return doc[start:end + len(PEERS_END)] + "\n\n" if 0 <= start < end else ""


def headings(doc: str) -> set[str]:
    """The ``## `` headings of a report, each figure in them masked (a size that changed between
    runs keeps the heading)."""
    return {re.sub(r"\d[\d,.]*", "N", line[3:].strip()) for line in doc.splitlines()
            if line.startswith("## ")}


def dropped_sections(old: str, new: str) -> list[str]:
    """The sections of the page as it was that the new report no longer has: what a run would
    lose. Every section must come from a benchmark the run makes or from a kept file the report
    prints (``docs/benchmarks-report/``, the Peers section): measured by hand, a figure goes to
    ``history.md``, dated."""
    return sorted(headings(old) - headings(new))


def exit_code(sections: list[Section], unmeasured: list[Check]) -> int:
    """1 when a guarantee broke in a run or a check had no figure to judge by, else 0."""
    code = 0
    if not all(s.correct for s in sections):
        print("a guarantee was broken in a run (see the tables)", file=sys.stderr)
        code = 1
    for check in unmeasured:
        print(f"not measured: {check.name} ({check.figure})", file=sys.stderr)
        code = 1
    return code
