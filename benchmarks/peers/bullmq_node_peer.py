"""BullMQ, the original Node.js library (npm ``bullmq``), in the peers harness, beside its Python
port (``bullmq_peer``): ``queue.add(..., {delay})`` one awaited call per job; one worker process
running ``new Worker(...)`` with default options (concurrency 1), as BullMQ's docs start one.

The Node side is ``bullmq_node/peer.cjs``; its ``node_modules`` are in ``BENCH_NODE`` (default
``.bench-node`` in the repository, gitignored), which ``make bench-peers`` fills with npm. This
module imports only the standard library (it runs under the peers' interpreter).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.peers.record import url

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "bullmq_node" / "peer.cjs"
NODE_DIR = Path(os.environ.get("BENCH_NODE", HERE.parent.parent / ".bench-node"))
DIST = "bullmq (node)"
WORKER_NOTE = "`node benchmarks/peers/bullmq_node/peer.cjs worker` (a BullMQ `Worker` with " \
              "default options: 1 process, concurrency 1); async handler"
ONE_AT_A_TIME = "its default (`concurrency` 1)"  # the concurrency-1 drain


def version() -> str:
    """The installed npm package's version."""
    package = NODE_DIR / "node_modules" / "bullmq" / "package.json"
    return str(json.loads(package.read_text())["version"])


def _env() -> dict[str, str]:
    return dict(os.environ, BENCH_URL=url(), BENCH_NODE=str(NODE_DIR))


def enqueue(jobs: list[tuple[str, float]]) -> float:
    """One awaited ``add`` per job in Node, delay = due - now in ms; the loop's seconds, as
    Node timed it (its start and connection left out, as for the other libraries)."""
    done = subprocess.run(["node", str(SCRIPT), "enqueue"], input=json.dumps(jobs).encode(),
                          env=_env(), capture_output=True, check=False)
    if done.returncode:
        raise RuntimeError(f"node enqueue failed: {done.stderr.decode()[-500:]}")
    return float(done.stdout.decode().split()[-1])


def worker_command(one_at_a_time: bool = False) -> list[str]:
    """The worker process (its default concurrency 1: ``one_at_a_time`` too); ``BENCH_NODE``
    reaches it through the environment the harness passes (set here at import)."""
    os.environ.setdefault("BENCH_NODE", str(NODE_DIR))
    return ["node", str(SCRIPT), "worker"]


def describe(client: Any) -> str:
    """What ran: Node's version and the package's."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return f"node {node.stdout.strip()}, bullmq {version()} (npm)"
