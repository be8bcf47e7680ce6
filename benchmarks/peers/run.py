"""The peers comparison: every library through the same workloads, then the table in the docs.

Runs in ``.bench-venv`` (``make bench-full`` creates it; the peer libraries are never runtime or
dev dependencies). One child process per (library, workload), each on a fresh redis-server
(``workload.py``); the results go to ``benchmarks/peers/last_run.json`` and to a "Peers" section
in ``docs/benchmarks.md`` and ``docs/comparison.md``.

Run: ``.bench-venv/bin/python -m benchmarks.peers.run [--peers arq rq] [--from-json FILE]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.peers.workload import (
    DRAIN_JOBS,
    ENQUEUE_JOBS,
    LATENESS_RATE,
    LATENESS_SECONDS,
    PEERS,
    ROOT,
)

WORKLOADS = {"enqueue": 180, "drain": 420, "lateness": 300}  # child time limits, s
TITLES = {"streamdelay": "**streamdelay**", "arq": "arq", "rq": "RQ", "dramatiq": "Dramatiq",
          "celery": "Celery", "saq": "SAQ", "bullmq": "BullMQ (py)", "huey": "Huey"}
START, END = "<!-- peers:start -->", "<!-- peers:end -->"
JSON_OUT = ROOT / "benchmarks" / "peers" / "last_run.json"
COMMAND = "make bench-full"
READING = [  # what explains the columns, from each library's source (versions above)
    "Reading the table (the mechanisms, from each library's source):", "",
    "- arq, SAQ and Huey find due jobs by polling: arq's worker every `poll_delay` (0.5 s), "
    "SAQ's every `timers[\"schedule\"]` (1 s), Huey's scheduler every `scheduler_interval` "
    "(1 s); their lateness is that interval, whatever the load.",
    "- RQ's default `Worker` forks a work horse process per job, which bounds its drain to tens "
    "of jobs/s here; at 200 due/s the backlog grows for the whole run, hence a lateness of "
    "seconds. `ScheduledJobRegistry.schedule` scores a job by its due time truncated to whole "
    "seconds (`calendar.timegm`) and the scheduler compares it with the current whole second, "
    "so a job can start up to 1 s early: the drain row counts them.",
    "- Celery fetches ETA tasks into the worker at once and holds them in memory on timers: low "
    "lateness, at the price of worker memory and of the Redis broker's visibility timeout "
    "caveat (see [Comparison](comparison.md#celery)).",
    "- BullMQ's `Worker` runs one job at a time by default (`concurrency` 1), each with several "
    "round trips: at ~240 jobs/s it barely keeps up with 200 due/s.",
    "- streamdelay's dispatcher sleeps until the next due time, moves due jobs with one Lua "
    "script per batch, and the worker reads them from a stream; delayed jobs stay in Redis.",
]


def run_child(peer: str, workload: str) -> dict[str, Any]:
    """One workload of one library in a child process, bounded by ``WORKLOADS[workload]``."""
    limit = WORKLOADS[workload]
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.peers.workload", "--peer", peer,
                             "--workload", workload], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the child stops its worker and redis-server
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        return {"peer": peer, "workload": workload, "error": f"timeout >{limit} s"}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]))
    last = (err.strip().splitlines() or ["no output"])[-1]
    return {"peer": peer, "workload": workload, "error": f"failed: {last[:160]}"}


def _num(value: float, digits: int = 0) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def _ms(value: float) -> str:
    return _num(value, 1 if value < 100 else 0)


def _cell(result: dict[str, Any] | None, row: str) -> str:
    """One table cell: the figure, or why there is none."""
    if result is None:
        return "not run"
    if "error" in result:
        return result["error"]
    short = result.get("done", result.get("jobs")) < result.get("jobs", 0)
    if row == "enqueue":
        return _num(result["jobs_per_s"])
    if row == "raw":
        return _num(result["raw_zadd_per_s"])
    if row == "memory":
        return _num(result["bytes_per_job"])
    if row == "drain":
        figure = _num(result["jobs_per_s"])
        if short:
            return (f"timeout >{result['timeout_s']:g} s ({result['done']:,} of "
                    f"{result['jobs']:,} done, {figure}/s)")
        return figure
    if row in ("p50", "p99", "max"):
        figure = _ms(result[f"{row}_ms"])
        missing = result["jobs"] - result["done"]
        return f"{figure} ({missing:,} not run in time)" if short else figure
    if row == "early":
        earliest = result.get("min_ms", math.nan)
        return f"{result['early']:,}" + (f" (earliest {earliest:+,.0f} ms)"
                                         if result["early"] and not math.isnan(earliest) else "")
    raise ValueError(row)


ROWS = [  # (label, workload, cell kind)
    ("enqueue, one call per job (jobs/s)", "enqueue", "enqueue"),
    ("raw ceiling at that moment: redis-py `ZADD`, 1 per call (ops/s)", "enqueue", "raw"),
    (f"Redis bytes per delayed job (~100 B body, {ENQUEUE_JOBS:,} jobs)", "enqueue", "memory"),
    (f"drain: {DRAIN_JOBS // 1000}k jobs due at once (jobs/s)", "drain", "drain"),
    (f"lateness, {LATENESS_RATE} due/s: p50 (ms)", "lateness", "p50"),
    (f"lateness, {LATENESS_RATE} due/s: p99 (ms)", "lateness", "p99"),
    (f"lateness, {LATENESS_RATE} due/s: max (ms)", "lateness", "max"),
    (f"started before due (of {int(LATENESS_RATE * LATENESS_SECONDS):,} lateness jobs)",
     "lateness", "early"),
    (f"started before due (of {DRAIN_JOBS:,} drain jobs)", "drain", "early"),
]


def table(results: list[dict[str, Any]], peers: list[str]) -> list[str]:
    """The markdown table: one row per workload, one column per library."""
    found = {(r["peer"], r["workload"]): r for r in results}
    lines = ["| workload | " + " | ".join(TITLES[p] for p in peers) + " |",
             "|---|" + "---|" * len(peers)]
    for label, workload, kind in ROWS:
        cells = [_cell(found.get((p, workload)), kind) for p in peers]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def section(payload: dict[str, Any], heading: str = "##") -> str:
    """The "Peers" markdown section (between markers, so a later run replaces it)."""
    results, peers = payload["results"], payload["peers"]
    versions = {r["peer"]: r["version"] for r in results if "version" in r}
    workers = {r["peer"]: r["worker"] for r in results if "worker" in r}
    loads = [r["load_at_start"] for r in results if "load_at_start" in r]
    lines = [
        START, f"{heading} Peers: the same workloads in arq, RQ, Dramatiq, Celery, SAQ, BullMQ "
        "and Huey", "",
        f"Measured by `{COMMAND}` (`benchmarks/peers/run.py`, in `.bench-venv`) on "
        f"{payload['date']} UTC, {payload['machine']}, Redis {payload['redis']}, Python "
        f"{payload['python']}; load average {min(loads, default=0):.1f}-"
        f"{max(loads, default=0):.1f} at the start of the workloads (other processes shared "
        "the 2 cores: read the figures as noisy, and compare each enqueue figure with the raw "
        "ceiling measured at the same moment).", "",
        *table(results, peers), "",
        "Versions: " + ", ".join(f"{TITLES[p].strip('*')} {versions[p]}" for p in peers
                                 if p in versions) + ".", "",
        "How: each library and each workload gets its own fresh `redis-server` (7.0, no "
        "persistence). Every library runs the same no-op handler: it appends the job id and "
        "`time.time()` to a file (not Redis, so the Redis figures are the library's own). Job "
        "bodies are ~100 B of JSON. *enqueue*: "
        f"{ENQUEUE_JOBS:,} jobs due in an hour, one library call per job, no worker; memory = "
        "`INFO used_memory` after - before, divided by the jobs. *drain*: one worker process "
        "started as the library documents, warmed up, then "
        f"{DRAIN_JOBS:,} jobs all due at one instant T0 (enqueued before T0); jobs / (last "
        "handler start - T0). *lateness*: one worker process, "
        f"{LATENESS_RATE} jobs due per second for {LATENESS_SECONDS:g} s, all enqueued ahead; "
        "lateness = handler start - due, both from the wall clock of this one machine "
        "(streamdelay's own lateness benchmarks use the Redis server clock instead). A workload "
        "that does not finish within its bound shows `timeout`.", "",
        *READING, "",
        "The worker of each library (one process each; a library's default settings otherwise):",
        "", *(f"- {TITLES[p].strip('*')}: {workers[p]}" for p in peers if p in workers), "",
        END,
    ]
    return "\n".join(lines) + "\n"


def put_section(path: Path, text: str, before: str | None) -> None:
    """Replace the marked section in ``path``, or insert it before the ``before`` heading."""
    doc = path.read_text()
    if START in doc and END in doc:
        doc = re.sub(re.escape(START) + ".*?" + re.escape(END) + "\n?", lambda _: text, doc,
                     flags=re.S)
    elif before and before in doc:
        doc = doc.replace(before, text + "\n" + before, 1)
    else:
        doc = doc.rstrip("\n") + "\n\n" + text
    path.write_text(doc)


def main() -> None:
    """Run every (library, workload), save the JSON, print the table, update the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS),
                        choices=list(WORKLOADS))
    parser.add_argument("--from-json", help="render the docs from a saved run instead")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        payload = json.loads(Path(args.from_json).read_text())
    else:
        results = []
        for peer in args.peers:
            for workload in args.workloads:
                result = run_child(peer, workload)
                print(json.dumps(result), flush=True)
                results.append(result)
        payload = {
            "date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}",
            "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()} "
                       f"{platform.release()}",
            "python": platform.python_version(),
            "redis": next((r["redis"] for r in results if "redis" in r), "?"),
            "peers": args.peers, "results": results}
        JSON_OUT.write_text(json.dumps(payload, indent=1) + "\n")
    print("\n".join(table(payload["results"], payload["peers"])))
    if not args.no_docs:
        put_section(ROOT / "docs" / "benchmarks.md", section(payload),
                    "## What bounds the figures")
        put_section(ROOT / "docs" / "comparison.md", section(payload), "## At a glance")
        print("updated docs/benchmarks.md and docs/comparison.md")


if __name__ == "__main__":
    main()
