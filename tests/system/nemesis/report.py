"""The report of a ``make nemesis`` run in docs/reliability.md (#latest-nemesis-run), written from
the runs' ``summary.json`` and ``violations.txt`` (tests/system/nemesis/run.py), never by hand:
``make nemesis`` calls ``python -m tests.system.nemesis.report --write docs/reliability.md DIR...``
once its runs are done (each ``DIR`` one run's output, ``nemesis-results/seed-1``...), and the
text between the two marker lines of the page is replaced. Without ``--write`` it prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BEGIN = "<!-- nemesis-report:begin (written by make nemesis: tests/system/nemesis/report.py) -->"
END = "<!-- nemesis-report:end -->"
SLICE_LINES = 40  # of the first violation's report, per run that had one


def _redis_version() -> str:
    try:
        done = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                              timeout=10, check=False)
    except OSError:
        return "?"
    words = [w for w in done.stdout.split() if w.startswith("v=")]
    return words[0][2:] if words else "?"


def _code() -> str:
    """What code ran: ``NEMESIS_CODE`` when set (a run from a copy of the tree), else the git
    commit, marked ``+ uncommitted changes`` when the tree differs from it."""
    if os.environ.get("NEMESIS_CODE"):
        return os.environ["NEMESIS_CODE"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=30,
                               check=False).stdout.strip()
    except OSError:
        return "?"
    return f"commit {head}{' + uncommitted changes' if dirty else ''}" if head else "?"


def _faults(summary: dict[str, Any]) -> str:
    faults = summary.get("faults") or {}
    return ", ".join(f"{name} {n}" for name, n in sorted(faults.items())) or "none"


def _row(summary: dict[str, Any]) -> str:
    outcomes = summary.get("outcomes") or {}
    by_rule = summary.get("violations_by_rule") or {}
    verdict = ("**0**" if not summary["violations"] else
               f"**{summary['violations']}** ({', '.join(f'{r} {n}' for r, n in by_rule.items())})")
    errors = len(summary.get("fault_errors") or [])
    return (f"| {summary.get('topology', 'single')} | {summary['seed']} | "
            f"{summary['duration_s']:g} s | {summary['operations']} "
            f"({outcomes.get('ok', 0)} ok, {outcomes.get('fail', 0)} fail, "
            f"{outcomes.get('unknown', 0)} unknown) | {summary['runs']} | "
            f"{_faults(summary)}{f' ({errors} failed to inject)' if errors else ''} | "
            f"{summary['chains']} / {summary['batches']} / {summary['callbacks']} | "
            f"{summary['results_awaited']} | {'yes' if summary['settled'] else 'NO'} | "
            f"{verdict} |")


def _went_wrong(summary: dict[str, Any]) -> str:
    """What went wrong with the run itself (not the queue's history), or ''."""
    wrong = []
    if not summary.get("settled"):
        wrong.append("the queue did not settle within the settle time")
    if summary.get("unreadable"):
        wrong.append(f"{summary['unreadable']} jobs could not be read back")
    if summary.get("producers_failed"):
        wrong.append(f"producers exited with an error: {summary['producers_failed']}")
    for error in summary.get("fault_errors") or []:
        wrong.append(f"a fault failed: {error}")
    return "; ".join(wrong)


def _replay(summary: dict[str, Any]) -> str:
    topology = summary.get("topology", "single")
    quick = " --quick" if summary.get("quick") else ""
    return (f"python -m tests.system.nemesis.run --topology {topology} --seed "
            f"{summary['seed']} --duration {summary['duration_s']:g}{quick} "
            f"--out nemesis-results")


def render(dirs: list[Path], missing: list[str] | None = None) -> str:
    """The report's markdown (between the markers) for the runs in ``dirs`` (``missing``: the
    runs that left no summary)."""
    missing = missing or []
    summaries = [(d, json.loads((d / "summary.json").read_text())) for d in dirs]
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()
    total_ops = sum(s["operations"] for _, s in summaries)
    total_runs = sum(s["runs"] for _, s in summaries)
    total_faults = sum(sum((s.get("faults") or {}).values()) for _, s in summaries)
    total_violations = sum(s["violations"] for _, s in summaries)
    pairs = sum(int(s.get("priority_pairs", 0)) for _, s in summaries)
    acked = sum(sum((s.get("acknowledged") or {}).values()) for _, s in summaries)
    out = [BEGIN, "",
           f"### Latest `make nemesis` run ({now}) {{#latest-nemesis-run}}", "",
           f"Generated by `make nemesis` from the runs' `summary.json` "
           f"(tests/system/nemesis/report.py); do not edit by hand. Machine: {os.cpu_count()} "
           f"cores, load average {load[0]:.1f} at the end, Linux {platform.release()}, "
           f"redis-server {_redis_version()}; code: {_code()}. In all: {total_ops} "
           f"operations ({acked} enqueues acknowledged), {total_runs} handler runs, "
           f"{total_faults} faults, {pairs} pairs of jobs judged by the priority rule, "
           f"**{total_violations} violations**.", "",
           "| topology | seed | length | operations | handler runs | faults injected | "
           "chains / batches / callbacks | results awaited | settled | violations |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    out += [_row(s) for _, s in summaries]
    out += ["", "Each run again (the seed fixes the faults and what the producers do; see "
            "[Seeds](#make-nemesis)):", "", "```"]
    out += [_replay(s) for _, s in summaries]
    out += ["```"]
    for name in missing:
        out += ["", f"`{name}`: the run broke before its check (no `summary.json`; its output is "
                "in the `make nemesis` log)."]
    for _, s in summaries:
        wrong = _went_wrong(s)
        if wrong:
            out += ["", f"{s.get('topology', 'single')} seed {s['seed']}: the run itself went "
                    f"wrong: {wrong}."]
    for d, s in summaries:
        if not s["violations"]:
            continue
        text = (d / "violations.txt").read_text().splitlines()
        out += ["", f"{s.get('topology', 'single')} seed {s['seed']}, its first violations "
                f"(all of them in `{d}/violations.txt`):", "", "```text",
                *text[:SLICE_LINES], "```"]
    out += ["", END]
    return "\n".join(out)


def write(page: Path, text: str) -> None:
    """Replace the text between the markers of ``page`` (both lines included) with ``text``."""
    content = page.read_text()
    begin, end = content.find(BEGIN), content.find(END)
    if begin < 0 or end < begin:
        raise SystemExit(f"{page}: the report's marker lines are missing ({BEGIN!r} ... {END!r})")
    page.write_text(content[:begin] + text + content[end + len(END):])


def main(argv: list[str]) -> int:
    """Print the report, or ``--write`` it into a page."""
    parser = argparse.ArgumentParser(prog="nemesis-report")
    parser.add_argument("--write", type=Path, help="the page to write it into")
    parser.add_argument("dirs", type=Path, nargs="+", help="run output directories")
    args = parser.parse_args(argv)
    present = [d for d in args.dirs if (d / "summary.json").is_file()]
    missing = [str(d) for d in args.dirs if d not in present]
    if missing:
        print(f"nemesis report: no summary.json in {', '.join(missing)} (the run broke early)",
              file=sys.stderr)
    if not present:
        return 1
    text = render(present, missing)
    if args.write:
        write(args.write, text)
        print(f"nemesis report written into {args.write}")
    else:
        print(text)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
