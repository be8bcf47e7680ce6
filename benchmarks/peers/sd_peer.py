"""streamdelay in the peers harness: ``Queue.enqueue`` one call per job; one
``streamdelay worker`` process with default settings (concurrency 32, embedded dispatcher).

Runs under the project's ``.venv`` (``run.py``), so it is this checkout's code: ``describe``
fails the workload when ``streamdelay`` is imported from anywhere else, and lists the scripts
the workload loaded into Redis (with the enqueue workload's commands per job, the one-job
enqueue script shows as one ``evalsha`` per job).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import streamdelay as sd
from benchmarks.peers.record import body, record, url
from streamdelay.io.agreement import agree_partitions_sync
from streamdelay.protocol.scripts import load_scripts

ROOT = Path(__file__).resolve().parent.parent.parent

DIST = "streamdelay"
WORKER_NOTE = "`streamdelay worker benchmarks.peers.sd_peer:worker` (defaults: 1 process, " \
              "concurrency 32, embedded dispatcher); async handler"
ONE_AT_A_TIME = "`--concurrency 1`"  # the concurrency-1 drain (benchmarks/peers/run.py)

queue = sd.Queue("bench", url=url())
worker = sd.Worker(queue)


@worker.handler("bench.job")
async def noop(job: sd.Job) -> None:
    """The no-op handler: record the job id and the time."""
    record(job.body["id"])


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One ``Queue.enqueue`` per job, due at its absolute time; seconds for the loop."""
    q = sd.Queue("bench", url=url())
    try:
        # the queue exists before it migrates (migrate never creates one), whether or not the
        # worker process has started yet
        agree_partitions_sync(q.client, url(), "bench", q.config.partitions, q.config.retry_for)
        q.migrate()  # one release only: layout 2, as the earlier runs measured (docs/keys.md#fleet)
        began = time.perf_counter()
        for job_id, due in jobs:
            q.enqueue("bench.job", body(job_id), at=due, id=job_id)
        return time.perf_counter() - began
    finally:
        q.close()


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process, as the docs start it (``one_at_a_time``: one handler at once)."""
    return [sys.executable, "-m", "streamdelay", "worker", "benchmarks.peers.sd_peer:worker",
            "--url", url(), "--log-level", "warning",
            *(["--concurrency", "1"] if one_at_a_time else [])]


def describe(client: Any) -> dict[str, Any]:
    """The code that ran: streamdelay's package directory (this checkout's, or an error) and the
    streamdelay scripts now loaded in the benchmark's Redis."""
    package = Path(sd.__file__).resolve().parent
    if not package.is_relative_to(ROOT):
        raise RuntimeError(f"streamdelay imported from {package}, not from this checkout {ROOT}")
    scripts = load_scripts()
    loaded = client.script_exists(*(s.sha for s in scripts.values()))
    return {"package": str(package),
            "scripts_loaded": [name for name, ok in zip(scripts, loaded, strict=True) if ok]}
