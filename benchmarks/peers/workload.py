"""One workload against one library, in this process, on its own fresh redis-server.

``python -m benchmarks.peers.workload --peer arq --workload drain`` prints one line
``RESULT {json}``. ``run.py`` starts one such child per (library, workload), so every library
and every workload gets a fresh server, and a library that hangs costs one bounded child.

Workloads (the same for every library; job bodies ~100 B, see ``record.body``):

- ``enqueue``: ``ENQUEUE_JOBS`` delayed jobs (due in an hour), one library call per job, no
  worker running: jobs/s, and Redis ``INFO used_memory`` after - before, per job;
- ``drain``: one worker process of the library, started as its docs say and idle (a warm-up
  batch proves it runs), then ``DRAIN_JOBS`` jobs all due at one instant T0, enqueued before T0:
  jobs / (last handler start - T0);
- ``lateness``: one worker process; ``LATENESS_RATE`` due jobs/s for ``LATENESS_SECONDS``
  (all enqueued ahead): handler start - due, p50/p99/max, and how many started early.

Times are the wall clock of this machine (``time.time()``) in the handler and here: one clock.
Each wait is bounded (``DRAIN_TIMEOUT``, ``LATENESS_TAIL``); a library that does not finish in time
reports how many jobs it handled.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import percentile, redis_server  # noqa: E402

PEERS = {  # library -> module in benchmarks/peers
    "streamdelay": "sd_peer", "arq": "arq_peer", "rq": "rq_peer", "dramatiq": "dramatiq_peer",
    "celery": "celery_peer", "saq": "saq_peer", "bullmq": "bullmq_peer", "huey": "huey_peer",
}
ENQUEUE_JOBS = 10_000
DRAIN_JOBS = 10_000
DRAIN_TIMEOUT = 150.0
LATENESS_RATE = 200
LATENESS_SECONDS = 10.0
LATENESS_TAIL = 60.0
WARM_UP_JOBS = 200
FAR = 3600.0


class WorkerProcess:
    """One worker process of a library, in its own process group (killed as a group)."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log.open("wb"),
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def check_alive(self) -> None:
        """Raise when the worker exited."""
        if self.proc.poll() is not None:
            tail = self.log.read_text(errors="replace")[-1500:]
            raise RuntimeError(f"worker exited with {self.proc.returncode}:\n{tail}")

    def stop(self) -> None:
        """SIGTERM the group, SIGKILL it after 10 s."""
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(wait)
                os.killpg(self.proc.pid, signal.SIGKILL)  # leftovers (pool children)
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return
            return


class Records:
    """The handler records file, read incrementally: job id -> first handler start (epoch s)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.duplicates = path, 0, 0
        self.starts: dict[str, float] = {}

    def poll(self) -> None:
        """Read the lines appended since the last poll."""
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        for line in data[:end].decode().splitlines():
            job_id, started = line.split()
            if job_id in self.starts:
                self.duplicates += 1
            else:
                self.starts[job_id] = float(started)

    def wait(self, ids: list[str], deadline: float, worker: WorkerProcess) -> dict[str, float]:
        """Wait until every id is recorded or ``deadline``; the starts of the ids found."""
        wanted = set(ids)
        while True:
            self.poll()
            if wanted <= self.starts.keys() or time.time() > deadline:
                return {i: self.starts[i] for i in ids if i in self.starts}
            worker.check_alive()
            time.sleep(0.05)


def used_memory(client: Any) -> int:
    """Redis ``INFO memory`` used_memory."""
    return int(client.info("memory")["used_memory"])


def raw_round_trips(client: Any, n: int = 2000) -> float:
    """The raw ceiling of the moment: redis-py ``ZADD`` round trips per second, one per call."""
    began = time.perf_counter()
    for i in range(n):
        client.zadd("raw:single", {f"r{i}": 1e12 + i})
    seconds = time.perf_counter() - began
    client.delete("raw:single")
    return n / seconds


def run_enqueue(peer: ModuleType, client: Any) -> dict[str, Any]:
    """Delayed jobs one call each, no worker: jobs/s and used_memory per job."""
    peer.enqueue([(f"warm{i}", time.time() + FAR) for i in range(20)])  # connect, load scripts
    before = used_memory(client)
    far = time.time() + FAR
    seconds = peer.enqueue([(f"e{i}", far + i / 1000) for i in range(ENQUEUE_JOBS)])
    after = used_memory(client)
    return {"jobs": ENQUEUE_JOBS, "seconds": seconds, "jobs_per_s": ENQUEUE_JOBS / seconds,
            "bytes_per_job": (after - before) / ENQUEUE_JOBS, "keys": client.dbsize(),
            "raw_zadd_per_s": raw_round_trips(client)}


def _warm_up(peer: ModuleType, records: Records, worker: WorkerProcess) -> float:
    """A batch due now, waited for: the worker runs. Returns the enqueue rate seen (jobs/s)."""
    jobs = [(f"w{i}", time.time()) for i in range(WARM_UP_JOBS)]
    seconds = peer.enqueue(jobs)
    got = records.wait([j for j, _ in jobs], time.time() + 90, worker)
    if len(got) < WARM_UP_JOBS:
        raise RuntimeError(f"worker handled {len(got)} of {WARM_UP_JOBS} warm-up jobs in 90 s")
    return WARM_UP_JOBS / seconds


def run_drain(peer: ModuleType, worker: WorkerProcess, records: Records) -> dict[str, Any]:
    """DRAIN_JOBS due at T0, one worker: jobs/s from T0 to the last handler start."""
    rate = _warm_up(peer, records, worker)
    t0 = time.time() + 1.5 + 1.3 * DRAIN_JOBS / rate
    ids = [f"d{i}" for i in range(DRAIN_JOBS)]
    enqueue_s = peer.enqueue([(i, t0) for i in ids])
    late_enqueue = time.time() - t0
    got = records.wait(ids, t0 + DRAIN_TIMEOUT, worker)
    seconds = max(got.values()) - t0 if got else float("nan")
    return {"jobs": DRAIN_JOBS, "done": len(got), "seconds": seconds,
            "jobs_per_s": len(got) / seconds if got else 0.0, "timeout_s": DRAIN_TIMEOUT,
            "enqueue_s": enqueue_s, "enqueue_past_t0_s": max(0.0, late_enqueue),
            "early": sum(1 for s in got.values() if s < t0), "duplicates": records.duplicates,
            "min_ms": (min(got.values()) - t0) * 1000 if got else float("nan")}


def run_lateness(peer: ModuleType, worker: WorkerProcess, records: Records) -> dict[str, Any]:
    """LATENESS_RATE due jobs/s for LATENESS_SECONDS: handler start - due."""
    rate = _warm_up(peer, records, worker)
    count = int(LATENESS_RATE * LATENESS_SECONDS)
    t0 = time.time() + 1.5 + 1.3 * count / rate
    jobs = [(f"l{i}", t0 + i / LATENESS_RATE) for i in range(count)]
    peer.enqueue(jobs)
    late_enqueue = time.time() - t0
    got = records.wait([j for j, _ in jobs], t0 + LATENESS_SECONDS + LATENESS_TAIL, worker)
    lateness = [(got[j] - due) * 1000 for j, due in jobs if j in got]
    return {"jobs": count, "done": len(got), "rate": LATENESS_RATE,
            "p50_ms": percentile(lateness, 50), "p99_ms": percentile(lateness, 99),
            "max_ms": max(lateness, default=float("nan")),
            "min_ms": min(lateness, default=float("nan")),
            "early": sum(1 for x in lateness if x < 0), "timeout_s": LATENESS_TAIL,
            "enqueue_past_t0_s": max(0.0, late_enqueue), "duplicates": records.duplicates}


def run(peer_name: str, workload: str) -> dict[str, Any]:
    """Start a fresh redis-server, load the peer module against it, run one workload."""
    logdir = Path(tempfile.mkdtemp(prefix=f"peer-{peer_name}-{workload}-"))
    with redis_server() as server:
        os.environ.update(BENCH_URL=server.url, STREAMDELAY_URL=server.url,
                          BENCH_RECORDS=str(logdir / "records.txt"),
                          PYTHONPATH=os.pathsep.join([str(ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
        peer = importlib.import_module(f"benchmarks.peers.{PEERS[peer_name]}")
        client = server.client()
        result: dict[str, Any] = {"peer": peer_name, "workload": workload,
                                  "version": metadata.version(peer.DIST),
                                  "worker": " ".join(peer.WORKER_NOTE.split()),
                                  "load_at_start": os.getloadavg()[0]}
        if workload == "enqueue":
            result.update(run_enqueue(peer, client))
        else:
            worker = WorkerProcess(peer.worker_command(), dict(os.environ), logdir / "worker.log")
            try:
                records = Records(logdir / "records.txt")
                result.update((run_drain if workload == "drain" else run_lateness)(
                    peer, worker, records))
            finally:
                worker.stop()
        result["redis"] = client.info("server")["redis_version"]
    return result


def _terminate(*_: object) -> None:
    raise SystemExit(143)  # unwinds the context managers: worker and redis-server stopped


def main() -> None:
    """Command line entry point (started by ``run.py``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", required=True, choices=sorted(PEERS))
    parser.add_argument("--workload", required=True, choices=["enqueue", "drain", "lateness"])
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    print("RESULT " + json.dumps(run(args.peer, args.workload)), flush=True)


if __name__ == "__main__":
    main()
