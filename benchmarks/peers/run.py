"""The peers comparison: every library through the same workloads, then the table in the docs.

One child process per (library, workload), each on a fresh redis-server (``workload.py``), each
under its library's own interpreter: the peers' under ``.bench-venv`` (the pinned peer libraries,
no streamdelay: they need redis-py < 6, streamdelay >= 6.2; ``make bench-peers`` creates it),
streamdelay's under the project's ``.venv`` (this checkout's code, installed editable), which
runs this process too. The results go to ``benchmarks/peers/last_run.json`` and
to a "Peers" section in ``docs/benchmarks.md`` and ``docs/comparison.md``.

``--quick`` runs every library and workload at the ``QUICK`` sizes (a few minutes: a check of the
pipeline, not figures) and writes its JSON elsewhere (``--out``, default a temporary file), never
the docs nor ``last_run.json``.

``--merge`` runs the chosen workloads and puts their results into the saved run in place of
the same (library, workload); the table dates those rows apart (``--workloads drain1
--merge``: the concurrency-1 drain row alone, a few minutes instead of the full run's ~20).

Run: ``.venv/bin/python -m benchmarks.peers.run [--quick] [--peers arq rq] [--workloads drain1]
[--merge] [--from-json FILE]``.
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
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.peers.workload import (
    FULL,
    ONE_AT_A_TIME,
    PEERS,
    QUICK,
    ROOT,
    SETTLE_TIMEOUT,
    SETTLE_TOLERANCE,
    SETTLE_WINDOW,
)

WORKLOADS = {"enqueue": 180, "memory": 360, "drain": 420, "drain1": 420,  # child limits, s
             "lateness": 300}
TITLES = {"streamdelay": "**streamdelay**", "arq": "arq", "rq": "RQ", "dramatiq": "Dramatiq",
          "celery": "Celery", "saq": "SAQ", "bullmq": "BullMQ (py)",
          "bullmq_node": "BullMQ (Node)", "huey": "Huey"}
START, END = "<!-- peers:start -->", "<!-- peers:end -->"
JSON_OUT = ROOT / "benchmarks" / "peers" / "last_run.json"
COMMAND = "make bench-peers"
PYTHONS = {"streamdelay": ROOT / ".venv" / "bin" / "python"}  # the others: PEERS_PYTHON
PEERS_PYTHON = ROOT / ".bench-venv" / "bin" / "python"
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
    "caveat (see [Comparison](comparison.md#celery)). In Redis a fetched task leaves the queue "
    "list for the `unacked` hash (the whole message) and the `unacked_index` sorted set, where "
    "it stays until the worker starts the task (or the visibility timeout puts it back on the "
    "list): Celery's *while it waits* row is those two structures, the copy Redis keeps for "
    "redelivery; the copy in the worker's own memory is not counted.",
    "- Dramatiq's `send_with_options(delay=...)` puts the message in the delay queue (a list, "
    "the body in a hash); its worker prefetches up to `worker_threads * 1000` (8,000 here) "
    "delayed messages into memory, moving their ids from the list to its per-worker ack set: "
    "with more delayed jobs than that, the rest wait in the list.",
    "- Huey's `schedule` pushes the message onto its queue list (one `LPUSH`); its consumer "
    "moves a job that is not due yet into its schedule sorted set when it reads it, so Huey's "
    "*as enqueued* row is a list entry's and its *while it waits* row a sorted-set member's.",
    "- arq, RQ, SAQ, BullMQ and streamdelay write a delayed job once, where it waits (a sorted "
    "set scored by due time, and the job's key or hash field); their workers leave it there "
    "until it is due.",
    "- BullMQ's `addDelayedJob` also appends a `delayed` event to the queue's events stream, "
    "trimmed to about `maxLenEvents` (10,000) entries: in its memory rows, a share that stops "
    "growing past 10,000 jobs.",
    "- BullMQ's `Worker` runs one job at a time by default (`concurrency` 1), each with several "
    "round trips: at ~240 jobs/s it barely keeps up with 200 due/s.",
    "- streamdelay's dispatcher sleeps until the next due time, moves due jobs with one Lua "
    "script per batch, and the worker reads them from a stream; delayed jobs stay in Redis.",
]


def run_child(peer: str, workload: str, python: Path, quick: bool) -> dict[str, Any]:
    """One workload of one library in a child process under ``python`` (the library's venv),
    bounded by ``WORKLOADS[workload]``."""
    limit = WORKLOADS[workload]
    argv = [str(python), "-m", "benchmarks.peers.workload", "--peer", peer, "--workload",
            workload, *(["--quick"] if quick else [])]
    began = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
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
            return {**json.loads(line[len("RESULT "):]),
                    "child_s": round(time.monotonic() - began, 1)}  # the child's wall time
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
    if row == "waiting":
        figure = _num(result["bytes_per_job"])
        notes = ([] if result["settled"] else
                 [f"still changing after {result['settle_s']:.0f} s"]) + (
            [f"{result['ran']:,} ran"] if result["ran"] else [])
        return f"{figure} ({', '.join(notes)})" if notes else figure
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
        shown = f"{earliest:+,.1f}" if abs(earliest) < 10 else f"{earliest:+,.0f}"
        return f"{result['early']:,}" + (f" (earliest {shown} ms)"
                                         if result["early"] and not math.isnan(earliest) else "")
    raise ValueError(row)


def rows(sizes: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The table's rows for a run's sizes: (label, workload, cell kind)."""
    enqueue, drain = int(sizes["enqueue_jobs"]), int(sizes["drain_jobs"])
    rate, lateness_jobs = sizes["lateness_rate"], int(sizes["lateness_rate"]
                                                      * sizes["lateness_seconds"])
    drained = f"{drain // 1000}k" if drain % 1000 == 0 else f"{drain:,}"
    return [
        ("enqueue, one call per job (jobs/s)", "enqueue", "enqueue"),
        ("raw ceiling at that moment: redis-py `ZADD`, 1 per call (ops/s)", "enqueue", "raw"),
        ("Redis bytes per delayed job while it waits: worker running, settled (~100 B "
         f"body, {enqueue:,} jobs)", "memory", "waiting"),
        (f"Redis bytes per delayed job as enqueued, no worker (~100 B body, {enqueue:,} jobs)",
         "enqueue", "memory"),
        (f"drain: {drained} jobs due at once (jobs/s)", "drain", "drain"),
        (f"drain: {drained} jobs due at once, every worker at concurrency 1 (jobs/s)", "drain1",
         "drain"),
        (f"lateness, {rate} due/s: p50 (ms)", "lateness", "p50"),
        (f"lateness, {rate} due/s: p99 (ms)", "lateness", "p99"),
        (f"lateness, {rate} due/s: max (ms)", "lateness", "max"),
        (f"started before due (of {lateness_jobs:,} lateness jobs)", "lateness", "early"),
        (f"started before due (of {drain:,} drain jobs)", "drain", "early"),
    ]


def _later(results: list[dict[str, Any]], date: str | None) -> str:
    """`` (measured DATE UTC, load A-B)`` for a row whose results a later ``--merge`` run
    measured (their ``measured`` differs from the run's ``date``), else nothing."""
    later = [r for r in results if r.get("measured", date) != date]
    if not later:
        return ""
    loads = [r["load_at_start"] for r in later if "load_at_start" in r]
    dates = sorted({r["measured"] for r in later})
    return (f" (measured {' to '.join(dates[::len(dates) - 1 or 1])} UTC, load average "
            f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f})")


def table(results: list[dict[str, Any]], peers: list[str],
          sizes: dict[str, Any] = FULL, date: str | None = None) -> list[str]:
    """The markdown table: one row per workload, one column per library; a row measured by a
    later ``--merge`` run says when."""
    found = {(r["peer"], r["workload"]): r for r in results}
    lines = ["| workload | " + " | ".join(TITLES[p] for p in peers) + " |",
             "|---|" + "---|" * len(peers)]
    for label, workload, kind in rows(sizes):
        row = [found[p, workload] for p in peers if (p, workload) in found]
        later = _later(row, date)
        cells = [_cell(found.get((p, workload)), kind) for p in peers]
        if later:  # measured apart, the load may differ from cell to cell: each says its own
            cells = [cell + (f" (load {found[p, workload]['load_at_start']:.1f})"
                             if "load_at_start" in found.get((p, workload), {}) else "")
                     for p, cell in zip(peers, cells, strict=True)]
        lines.append(f"| {label}{later} | " + " | ".join(cells) + " |")
    return lines


def section(payload: dict[str, Any], heading: str = "##") -> str:
    """The "Peers" markdown section (between markers, so a later run replaces it)."""
    results, peers = payload["results"], payload["peers"]
    sizes = payload.get("sizes", FULL)
    versions = {r["peer"]: r["version"] for r in results if "version" in r}
    redis_py = {p: r["redis_py"] for r in results for p in [r["peer"]] if "redis_py" in r}
    peers_redis_py = sorted({v for p, v in redis_py.items() if p != "streamdelay"})
    workers = {r["peer"]: r["worker"] for r in results
               if "worker" in r and r["workload"] not in ONE_AT_A_TIME}
    loads = [r["load_at_start"] for r in results
             if "load_at_start" in r and r.get("measured", payload["date"]) == payload["date"]]
    lines = [
        START, f"{heading} Peers: the same workloads in arq, RQ, Dramatiq, Celery, SAQ, BullMQ "
        "and Huey", "",
        f"Measured by `{COMMAND}` (`benchmarks/peers/run.py`: the peers in `.bench-venv`, "
        "streamdelay in the project's `.venv`, this checkout's code) on "
        f"{payload['date']} UTC, {payload['machine']}, Redis {payload['redis']}, Python "
        f"{payload['python']}; load average {min(loads, default=0):.1f}-"
        f"{max(loads, default=0):.1f} at the start of the workloads (other processes shared "
        "the 2 cores: read the figures as noisy, and compare each enqueue figure with the raw "
        "ceiling measured at the same moment).", "",
        *table(results, peers, sizes, payload["date"]), "",
        "Versions: " + ", ".join(f"{TITLES[p].strip('*')} {versions[p]}" for p in peers
                                 if p in versions)
        + (f"; redis-py {', '.join(peers_redis_py)} for the peers" if peers_redis_py else "")
        + (f", {redis_py['streamdelay']} for streamdelay" if "streamdelay" in redis_py else "")
        + (" (each library's raw ceiling is measured with its own redis-py)" if redis_py else "")
        + ".", "",
        *([f"BullMQ (py) is `bullmq` {versions['bullmq']} from PyPI, the Python port of BullMQ "
           "(a Python client that runs BullMQ's Lua scripts)"
           + (f"; BullMQ (Node) is `bullmq` {versions['bullmq_node']} from npm, the original "
              "library, run by Node.js (`benchmarks/peers/bullmq_node/peer.cjs`, the same "
              "workloads: one awaited `queue.add` per job, a `Worker` with its defaults, the "
              "no-op handler appending to the same records file)"
              if "bullmq_node" in versions else ": the Node.js library itself was not measured")
           + ".", ""] if "bullmq" in versions else []),
        "How: each library and each workload gets its own fresh `redis-server` (7.0, no "
        "persistence). Every library runs the same no-op handler: it appends the job id and "
        "`time.time()` to a file (not Redis, so the Redis figures are the library's own). Job "
        "bodies are ~100 B of JSON. *enqueue*: "
        f"{int(sizes['enqueue_jobs']):,} jobs due in an hour, one library call per job, no "
        "worker; its memory row (*as enqueued*) = Redis memory after - before, divided by the "
        "jobs: the state the producer leaves, kept because it is cheap and shows the libraries "
        "whose worker moves a delayed job. *memory* (the row *while it waits*, the one to "
        "compare): one worker process started as the library documents (with its scheduler), "
        "warmed up, Redis memory once it stops changing, then "
        f"{int(sizes['enqueue_jobs']):,} jobs due in an hour (none runs), and Redis memory "
        f"again once it stops changing (every sample of {SETTLE_WINDOW:g} s within "
        f"{SETTLE_TOLERANCE // 1024} KiB, at most {SETTLE_TIMEOUT:g} s): the state a delayed "
        "job spends most of its delay in, divided by the jobs. A library whose worker moves a "
        "waiting job elsewhere is measured after the move (see below); the JSON records where "
        "the bytes sit (keys grouped by name, `MEMORY USAGE`). Redis memory is `INFO memory` "
        "`used_memory` less the connections' buffers (`mem_clients_normal`), which come and go "
        "with the traffic (a worker blocked on a read holds a 20 KB query buffer at times). "
        "*drain*: one worker process "
        "started as the library documents, warmed up, then "
        f"{int(sizes['drain_jobs']):,} jobs all due at one instant T0 (enqueued before T0); "
        "jobs / (last "
        "handler start - T0). *lateness*: one worker process, "
        f"{sizes['lateness_rate']} jobs due per second for {sizes['lateness_seconds']:g} s, "
        "all enqueued ahead; "
        "lateness = handler start - due, both from the wall clock of this one machine "
        "(streamdelay's own lateness benchmarks use the Redis server clock instead). A workload "
        "that does not finish within its bound shows `timeout`.", "",
        *READING, "",
        "The worker of each library (one process each; a library's default settings otherwise):",
        "", *(f"- {TITLES[p].strip('*')}: {workers[p]}" for p in peers if p in workers), "",
        *_one_at_a_time(results, peers),
        END,
    ]
    return "\n".join(lines) + "\n"


def _one_at_a_time(results: list[dict[str, Any]], peers: list[str]) -> list[str]:
    """How each library ran one job at a time in the concurrency-1 drain (``drain1``)."""
    how = {r["peer"]: r["worker"] for r in results
           if r["workload"] in ONE_AT_A_TIME and "worker" in r}
    if not how:
        return []
    return ["The concurrency-1 drain row: the same worker, one job at a time: "
            + "; ".join(f"{TITLES[p].strip('*')} {how[p]}" for p in peers if p in how) + ".",
            ""]


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


def write_docs(payload: dict[str, Any], docs: Path) -> list[Path]:
    """The Peers section into ``docs``'s benchmarks.md and comparison.md, between the markers;
    nothing for a ``--quick`` run (its sizes are a check of the pipeline, not the table)."""
    if payload.get("quick"):
        return []
    text = section(payload)
    put_section(docs / "benchmarks.md", text, "## What bounds the figures")
    put_section(docs / "comparison.md", text, "## At a glance")
    return [docs / "benchmarks.md", docs / "comparison.md"]


def interpreters(sd_python: str, peers_python: str, peers: list[str]) -> dict[str, Path]:
    """Each library's interpreter; exits with one line when one is missing."""
    chosen = {p: Path(sd_python if p == "streamdelay" else peers_python) for p in peers}
    for peer, python in chosen.items():
        if not python.exists():
            hint = "make install" if peer == "streamdelay" else "make bench-peers"
            raise SystemExit(f"{peer}: no interpreter {python} (run `{hint}` first)")
    return chosen


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Run every chosen (library, workload), each child under its library's interpreter."""
    pythons = interpreters(args.sd_python, args.peers_python, args.peers)
    date = f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}"
    results = []
    for peer in args.peers:
        for workload in args.workloads:
            result = {**run_child(peer, workload, pythons[peer], args.quick), "measured": date}
            print(json.dumps(result), flush=True)
            results.append(result)
    return {
        "date": date,
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()} "
                   f"{platform.release()}",
        "python": platform.python_version(),
        "redis": next((r["redis"] for r in results if "redis" in r), "?"),
        "quick": args.quick, "sizes": QUICK if args.quick else FULL,
        "peers": args.peers, "results": results}


def merged(saved: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """``saved`` with ``run``'s results in place of its results of the same (library,
    workload): the saved run keeps its date, and the table dates the merged rows apart."""
    if saved.get("sizes", FULL) != run["sizes"]:
        raise SystemExit("--merge: the saved run has other sizes (a --quick run?)")
    fresh = {(r["peer"], r["workload"]) for r in run["results"]}
    kept = [r for r in saved["results"] if (r["peer"], r["workload"]) not in fresh]
    # a library the saved run did not have gets its column, in the order of PEERS
    peers = [p for p in PEERS if p in saved["peers"] or p in run["peers"]]
    return {**saved, "peers": peers, "results": kept + run["results"]}


def main() -> None:
    """Run every (library, workload), save the JSON, print the table, update the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS),
                        choices=list(WORKLOADS))
    parser.add_argument("--quick", action="store_true",
                        help="small sizes to check the pipeline: no docs, JSON to --out")
    parser.add_argument("--out", help="the JSON file (default: benchmarks/peers/last_run.json; "
                        "with --quick, a temporary file)")
    parser.add_argument("--sd-python", default=str(PYTHONS["streamdelay"]),
                        help="streamdelay's interpreter (default: the project's .venv)")
    parser.add_argument("--peers-python", default=str(PEERS_PYTHON),
                        help="the peers' interpreter (default: .bench-venv)")
    parser.add_argument("--from-json", help="render the docs from a saved run instead")
    parser.add_argument("--merge", action="store_true",
                        help="put this run's results into the saved run (--out), replacing its "
                             "results of the same library and workload; the table says when "
                             "those rows were measured")
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    if args.from_json:
        payload = json.loads(Path(args.from_json).read_text())
    else:
        payload = measure(args)
        out = Path(args.out) if args.out else (
            Path(tempfile.mkstemp(prefix="peers-quick-", suffix=".json")[1]) if args.quick
            else JSON_OUT)
        if args.merge:
            payload = merged(json.loads(out.read_text()), payload)
        out.write_text(json.dumps(payload, indent=1) + "\n")
        print(f"wrote {out}")
    print("\n".join(table(payload["results"], payload["peers"], payload.get("sizes", FULL),
                           payload["date"])))
    if not args.no_docs:
        written = write_docs(payload, ROOT / "docs")
        print(f"updated {' and '.join(str(p.relative_to(ROOT)) for p in written)}" if written
              else "a --quick run: docs/benchmarks.md and docs/comparison.md left as they are")


if __name__ == "__main__":
    main()
