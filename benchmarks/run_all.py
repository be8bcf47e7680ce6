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

Run: ``.venv/bin/python benchmarks/run_all.py [--full] [--out docs/benchmarks.md]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.core.harness import ROOT, Section, redis_server, versions
from benchmarks.core.report import exit_code, kept_peers_section, report
from benchmarks.e2e import (
    cluster_bench,
    drain,
    events_cost,
    lateness_e2e,
    lateness_rates,
    memory_drain,
    results_wait,
    servers,
)
from benchmarks.micro import (
    big_bodies,
    dispatch,
    durable,
    enqueue,
    inspect_jobs,
    redis_ceiling,
)
from benchmarks.web import dashboard_pages, http_bench, http_polls


def main() -> None:
    """Run the suite, print each table, write the markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args()
    began = time.monotonic()
    with redis_server() as server:
        info = {**versions(server.client()), "load_1m": f"{os.getloadavg()[0]:.2f}"}
    steps = [
        redis_ceiling.run,
        lateness_e2e.run,
        enqueue.run,
        lambda: (http_bench.run(single=20_000, batches=200, backlog=100_000, pairs=10_000)
                 if args.full else http_bench.run()),
        http_polls.run,  # 1,000 concurrent long polls on one serve process
        results_wait.run,  # issue 26: result delivered after the settle, 1,000 waiters
        lambda: dispatch.dispatch_alone(100_000),
        lambda: dispatch.backlog([10_000, 1_000_000] + ([10_000_000] if args.full else [])),
        lambda: drain.run(10_000),
        # issue 16: 100k due jobs, and the curve over worker processes (one more than the cores)
        lambda: drain.run(100_000, tuple(range(1, (os.cpu_count() or 1) + 2))),
        events_cost.run,  # issue 26: drain and enqueue with lifecycle events on against off
        lambda: memory_drain.run(1_000_000 if args.full else 100_000),
        lambda: lateness_rates.run(rates=(200, 2000), worker_count=1),
        # issue 16: 20k due/s with as many worker processes as the machine has cores
        lambda: lateness_rates.run(rates=(20000,), worker_count=os.cpu_count() or 1),
        servers.run,  # the core figures on Redis and on Valkey, side by side
        lambda: cluster_bench.run(memory_jobs=1_000_000 if args.full else 200_000),
        lambda: big_bodies.run([64 << 10, 1 << 20], 150),
        durable.run,
        lambda: inspect_jobs.run(10_000_000 if args.full else 1_000_000),
        lambda: dashboard_pages.run(10_000_000 if args.full else 1_000_000),
    ]
    sections = []
    for step in steps:
        try:
            section = step()
        except Exception as exc:  # one failed benchmark must not lose the others' figures
            section = Section(f"A benchmark failed: {type(exc).__name__}", ["error"],
                              [[str(exc).replace("\n", " ")[:300]]], correct=False)
        section.print()
        sections.append(section)
    minutes = (time.monotonic() - began) / 60
    peers = kept_peers_section(Path(args.out))
    text, unmeasured = report(sections, info, args.full, minutes, peers)
    print("\n" + text[text.index("## Targets"):text.index("\n## ", text.index("## Targets") + 3)])
    Path(args.out).write_text(text)
    print(f"\nwrote {args.out} ({minutes:.1f} min)")
    sys.exit(exit_code(sections, unmeasured))


if __name__ == "__main__":
    main()
