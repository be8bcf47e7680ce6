"""``make bench``: run every benchmark and write ``docs/benchmarks.md``.

Each benchmark starts its own redis-server on a free port; the raw ceilings are measured in the
same run, next to our figures. ``--full`` adds the long variants (10M backlog,
1M backlog drained back to the memory baseline). The benchmarks live in ``micro/`` (one
component in one process), ``e2e/`` (through worker processes), ``web/`` (the HTTP service and
the dashboard) and ``peers/`` (other libraries, ``make bench-peers``); what they share, and the
report writer, in ``core/``. The report's words are in ``docs/benchmarks-report/``.
The "Targets" list judges the issue-5 targets (``core/targets.py``) and the HTTP service's
(``web/http_bench.py``, keyed ``listed-target:``); a target or check with no figure is "not
measured" and the run exits 1.

Run: ``.venv/bin/python benchmarks/run_all.py [--full | --quick] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.core.harness import ROOT, Section, redis_server, versions
from benchmarks.core.report import dropped_sections, exit_code, kept_peers_section, report
from benchmarks.core.targets import BACKLOG_FULL, BACKLOG_LARGE, BACKLOG_SMALL
from benchmarks.e2e import (
    abort_latency,
    cluster_bench,
    drain,
    events_cost,
    fairness,
    lateness_e2e,
    lateness_rates,
    life,
    memory_drain,
    process_executor,
    results_wait,
    servers,
    workflows,
)
from benchmarks.micro import (
    big_bodies,
    delayed_layouts,
    dispatch,
    durable,
    enqueue,
    inspect_jobs,
    redis_ceiling,
)
from benchmarks.web import dashboard_pages, http_bench, http_polls

QUICK_OUT = Path(tempfile.gettempdir()) / "streamdelay-bench-quick.md"


Step = Callable[[], Section]


def report_steps(full: bool) -> list[Step]:
    """Every section of the report, in its order, at the report's sizes (``full``: the long
    variants)."""
    cores = os.cpu_count() or 1
    return [
        redis_ceiling.run,
        lateness_e2e.run,
        enqueue.run,
        lambda: (http_bench.run(single=20_000, batches=200, backlog=100_000, pairs=10_000)
                 if full else http_bench.run()),
        http_polls.run,  # 1,000 concurrent long polls on one serve process
        results_wait.run,  # issue 26: result delivered after the settle, 1,000 waiters
        workflows.run,  # issue 28: fan-in of 10,000, a chain of 1,000, waiting children
        lambda: dispatch.dispatch_alone(100_000),
        lambda: dispatch.backlog([BACKLOG_SMALL, BACKLOG_LARGE] + ([BACKLOG_FULL] if full else [])),
        # issue 39 item 3: bytes per delayed job, today's layout against the compact candidates
        lambda: delayed_layouts.run([BACKLOG_SMALL, BACKLOG_LARGE]
                                    + ([BACKLOG_FULL] if full else [])),
        lambda: drain.run(10_000),
        # issue 16: 100k due jobs, and the curve over worker processes (one more than the cores)
        lambda: drain.run(100_000, tuple(range(1, cores + 2))),
        events_cost.run,  # issue 26: drain and enqueue with lifecycle events on against off
        life.run,  # issue 39: a job's whole life on the server against plain commands
        process_executor.run,  # issue 36: handlers in child processes against threads
        abort_latency.run,  # issue 36: cancel(id, abort=True) to the handler's end, p99 <= 1 s
        # issue 27: Jain's index under a hot key's backlog, Redis µs per job staged vs plain
        lambda: fairness.section(10_000, 10, 100_000),
        lambda: memory_drain.run(1_000_000 if full else 100_000),
        lambda: lateness_rates.run(rates=(200, 2000), worker_count=1),
        # issue 39: the lateness targets with lifecycle events on too
        lambda: lateness_rates.run(rates=(200, 2000), worker_count=1, events=True),
        # issue 16: 20k due/s with as many worker processes as the machine has cores
        lambda: lateness_rates.run(rates=(20000,), worker_count=cores),
        servers.run,  # the core figures on Redis and on Valkey, side by side
        lambda: cluster_bench.run(memory_jobs=1_000_000 if full else 200_000),
        lambda: big_bodies.run([64 << 10, 1 << 20], 150),
        durable.run,
        lambda: inspect_jobs.run(10_000_000 if full else 1_000_000),
        lambda: dashboard_pages.run(10_000_000 if full else 1_000_000),
    ]


def quick_steps() -> list[Step]:
    """The same sections at their smallest sizes (``make bench-quick``): each benchmark starts,
    runs and reports; its figures mean nothing and no target is judged by them."""
    return [
        lambda: redis_ceiling.run(2_000),
        lambda: lateness_e2e.run(jobs=100, spread=1.0, cancels=10, worker_count=1),
        lambda: enqueue.run(single=200, many=2_000, callers=10),
        lambda: http_bench.run(single=300, batches=2, backlog=30, pairs=20, connections=4),
        lambda: http_polls.run(polls=20, rate=40, seconds=1.0),
        lambda: results_wait.run(waiters=20, jobs=200, sizes=(100,)),
        lambda: workflows.run(jobs=200, chain=20),
        lambda: dispatch.dispatch_alone(2_000),
        lambda: dispatch.backlog([1_000, 5_000]),
        lambda: delayed_layouts.run([2_000], kinds=("seq",)),
        lambda: drain.run(1_000, (1, 2)),
        lambda: events_cost.run(jobs=500, drains=1, single=200, rounds=2,
                                single_rounds=2, many=1_000),
        lambda: life.run(jobs=1_000, rounds=1),
        lambda: process_executor.run(jobs=500, cpu_jobs=20, turns=1),
        lambda: abort_latency.run(aborts=3),
        lambda: memory_drain.run(2_000, processes=1),
        lambda: lateness_rates.run(rates=(200,), worker_count=1),
        lambda: lateness_rates.run(rates=(200,), worker_count=1, events=True),
        lambda: servers.run(rounds=1),
        lambda: cluster_bench.run(jobs=1_000, workers=1, memory_jobs=2_000),
        lambda: big_bodies.run([64 << 10], 10),
        lambda: durable.run(single=100, many=1_000, callers=10),
        lambda: inspect_jobs.run(5_000),
        lambda: dashboard_pages.run(5_000),
    ]


def run_steps(steps: list[Step]) -> list[Section]:
    """Each step's section, printed as it ends; a step that raises gives a failed section."""
    sections = []
    for step in steps:
        try:
            section = step()
        except Exception as exc:  # one failed benchmark must not lose the others' figures
            section = Section(f"A benchmark failed: {type(exc).__name__}", ["error"],
                              [[str(exc).replace("\n", " ")[:300]]], correct=False)
        section.print()
        sections.append(section)
    return sections


def main() -> None:
    """Run the suite, print each table, write the markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true")
    mode.add_argument("--quick", action="store_true",
                      help="every benchmark at its smallest size; the report goes to --out "
                           f"(default {QUICK_OUT}), never docs/benchmarks.md")
    parser.add_argument("--out")
    args = parser.parse_args()
    out = Path(args.out or (QUICK_OUT if args.quick else ROOT / "docs" / "benchmarks.md"))
    if args.quick and out.resolve() == (ROOT / "docs" / "benchmarks.md").resolve():
        parser.error("--quick never writes docs/benchmarks.md: its figures are not measurements")
    began = time.monotonic()
    with redis_server() as server:
        info = {**versions(server.client()), "load_1m": f"{os.getloadavg()[0]:.2f}"}
    sections = run_steps(quick_steps() if args.quick else report_steps(args.full))
    minutes = (time.monotonic() - began) / 60
    peers = kept_peers_section(ROOT / "docs" / "benchmarks.md" if args.quick else out)
    text, unmeasured = report(sections, info, args.full, minutes, peers)
    print("\n" + text[text.index("## Targets"):text.index("\n## ", text.index("## Targets") + 3)])
    if not args.quick and out.exists():  # one run makes the whole page: nothing may be lost
        for heading in dropped_sections(out.read_text(), text):
            print(f"section dropped from {out.name}: {heading}", file=sys.stderr)
    out.write_text(text)
    print(f"\nwrote {out} ({minutes:.1f} min)")
    sys.exit(exit_code(sections, [] if args.quick else unmeasured))


if __name__ == "__main__":
    main()
