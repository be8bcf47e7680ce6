"""One workload against one library, in this process, on its own fresh redis-server.

``python -m benchmarks.peers.workload --peer arq --workload drain [--quick]`` prints one line
``RESULT {json}``. ``run.py`` starts one such child per (library, workload), so every library
and every workload gets a fresh server, and a library that hangs costs one bounded child. The
child runs under its library's own interpreter (``.bench-venv`` for the peers, which has no
streamdelay; the project's ``.venv`` for streamdelay), and starts the library's worker with it,
so this module imports only the standard library, redis-py and ``tests/support/redis_server``.

Workloads (the same for every library; job bodies ~100 B, see ``record.body``):

- ``enqueue``: ``enqueue_jobs`` delayed jobs (due in an hour), one library call per job, no
  worker running: jobs/s, Redis ``stored_memory`` after - before, per job, the Redis commands
  per job (``INFO commandstats``: the commands a Lua script runs count too), then the raw
  ceiling of that moment (redis-py ``ZADD``, one round trip per call);
- ``memory``: the state a delayed job waits in: one worker process of the library (with its
  scheduler, as its docs prescribe), warmed up, then ``enqueue_jobs`` jobs due in an hour (none
  runs); ``stored_memory`` once it stops changing (``settle``: the worker may move a job to a
  second structure, e.g. Huey's consumer from its queue list to its schedule sorted set, Celery's
  and Dramatiq's into their unacked/ack structures) - before, per job, and where the bytes sit
  (``layout``: keys grouped by name with digits masked, ``MEMORY USAGE``);
- ``drain``: one worker process of the library, started as its docs say and idle (a warm-up
  batch proves it runs), then ``drain_jobs`` jobs all due at one instant T0, enqueued before T0:
  jobs / (last handler start - T0);
- ``drain1``: the drain again, every library's worker at concurrency 1 (its module's
  ``ONE_AT_A_TIME``: the other rows run each library's defaults, 32 handlers for streamdelay,
  one for BullMQ (both the Node library and its Python port) and Celery): the row at matched
  concurrency;
- ``lateness``: one worker process; ``lateness_rate`` due jobs/s for ``lateness_seconds``
  (all enqueued ahead): handler start - due, p50/p99/max, and how many started early.

Times are the wall clock of this machine (``time.time()``) in the handler and here: one clock.
Each wait is bounded (``DRAIN_TIMEOUT``, ``LATENESS_TAIL``); a library that does not finish in time
reports how many jobs it handled. The sizes are ``FULL`` (the documented table) or, with
``--quick``, ``QUICK`` (a check of the whole pipeline in a few minutes; never for the docs).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
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

import redis  # noqa: E402

from benchmarks.core.stats import percentile  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

PEERS = {  # library -> module in benchmarks/peers
    "streamdelay": "sd_peer", "arq": "arq_peer", "rq": "rq_peer", "dramatiq": "dramatiq_peer",
    "celery": "celery_peer", "saq": "saq_peer", "bullmq": "bullmq_peer",
    "bullmq_node": "bullmq_node_peer", "huey": "huey_peer",
}
FULL = {"enqueue_jobs": 10_000, "drain_jobs": 10_000, "lateness_rate": 200,
        "lateness_seconds": 10.0}
QUICK = {"enqueue_jobs": 500, "drain_jobs": 500, "lateness_rate": 200, "lateness_seconds": 2.0}
ENQUEUE_JOBS, DRAIN_JOBS = int(FULL["enqueue_jobs"]), int(FULL["drain_jobs"])
LATENESS_RATE, LATENESS_SECONDS = int(FULL["lateness_rate"]), float(FULL["lateness_seconds"])
DRAIN_TIMEOUT = 150.0
LATENESS_TAIL = 60.0
WARM_UP_JOBS = 200
FAR = 3600.0
SETTLE_TIMEOUT = 120.0  # s: the bound on waiting for stored_memory to stop changing
SETTLE_WINDOW = 3.0  # s: longer than every peer's poll interval (1 s at most)
SETTLE_TOLERANCE = 16384  # bytes: max - min over the window at most this: settled


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


def stored_memory(client: Any) -> int:
    """Redis ``INFO memory`` used_memory less the clients' buffers (``mem_clients_normal``,
    ``mem_clients_slaves``): what the data costs, without the query and output buffers of the
    connections, which come and go with the traffic (a blocked worker's 20 KB query buffer)."""
    info = client.info("memory")
    return int(info["used_memory"]) - int(info.get("mem_clients_normal", 0)) - int(
        info.get("mem_clients_slaves", 0))


def command_calls(client: Any) -> dict[str, int]:
    """Redis ``INFO commandstats``: calls per command (``evalsha``, ``zadd``, ...)."""
    return {name.removeprefix("cmdstat_"): int(stats["calls"])
            for name, stats in client.info("commandstats").items()}


def raw_round_trips(client: Any, n: int = 2000) -> float:
    """The raw ceiling of the moment: redis-py ``ZADD`` round trips per second, one per call."""
    began = time.perf_counter()
    for i in range(n):
        client.zadd("raw:single", {f"r{i}": 1e12 + i})
    seconds = time.perf_counter() - began
    client.delete("raw:single")
    return n / seconds


def run_enqueue(peer: ModuleType, client: Any, jobs: int) -> dict[str, Any]:
    """Delayed jobs one call each, no worker: jobs/s, stored_memory and commands per job, and the
    raw ceiling right after."""
    peer.enqueue([(f"warm{i}", time.time() + FAR) for i in range(20)])  # connect, load scripts
    before, calls_before = stored_memory(client), command_calls(client)
    far = time.time() + FAR
    seconds = peer.enqueue([(f"e{i}", far + i / 1000) for i in range(jobs)])
    after, calls_after = stored_memory(client), command_calls(client)
    per_job = {name: round((count - calls_before.get(name, 0)) / jobs, 3)
               for name, count in sorted(calls_after.items()) if name != "info"}
    return {"jobs": jobs, "seconds": seconds, "jobs_per_s": jobs / seconds,
            "bytes_per_job": (after - before) / jobs, "keys": client.dbsize(),
            "commands_per_job": {k: v for k, v in per_job.items() if v},
            "raw_zadd_per_s": raw_round_trips(client)}


def settle(client: Any, worker: WorkerProcess | None, timeout: float,
           window: float = SETTLE_WINDOW, tolerance: int = SETTLE_TOLERANCE,
           interval: float = 0.25) -> tuple[int, float, bool]:
    """Wait until ``stored_memory`` stops changing: every sample of the last ``window`` seconds
    within ``tolerance`` bytes. Returns (stored_memory, seconds waited, settled in ``timeout``)."""
    began = time.monotonic()
    samples: list[tuple[float, int]] = []
    while True:
        now = time.monotonic()
        samples.append((now, stored_memory(client)))
        recent = [m for t, m in samples if t >= now - window]
        covered = now - samples[0][0] >= window
        if covered and max(recent) - min(recent) <= tolerance:
            return samples[-1][1], now - began, True
        if now - began > timeout:
            return samples[-1][1], now - began, False
        if worker is not None:
            worker.check_alive()
        time.sleep(interval)


def key_pattern(key: str) -> str:
    """A key's name with every run of digits masked: one pattern per structure of a library
    (``arq:job:e17`` and ``arq:job:e4242`` are both ``arq:job:eN``)."""
    return re.sub(r"\d+", "N", key)


def layout(client: Any) -> dict[str, dict[str, Any]]:
    """Where the bytes sit: keys grouped by ``key_pattern``, each group's type, key count and
    ``MEMORY USAGE ... SAMPLES 0`` total, largest first."""
    keys = [k.decode() if isinstance(k, bytes) else k for k in client.scan_iter(count=1000)]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.type(key)
        pipe.memory_usage(key, samples=0)
    replies = pipe.execute()
    groups: dict[str, dict[str, Any]] = {}
    for key, kind, size in zip(keys, replies[::2], replies[1::2], strict=True):
        kind = kind.decode() if isinstance(kind, bytes) else kind
        group = groups.setdefault(key_pattern(key), {"type": kind, "keys": 0, "bytes": 0})
        group["keys"] += 1
        group["bytes"] += size or 0
    return dict(sorted(groups.items(), key=lambda item: -item[1]["bytes"]))


def run_memory(peer: ModuleType, worker: WorkerProcess, records: Records,
               sizes: dict[str, float]) -> dict[str, Any]:
    """``enqueue_jobs`` jobs due in an hour with the worker running: stored_memory once it
    settles - before, per job, and the keys they sit in."""
    _warm_up(peer, records, worker)
    client = redis.Redis.from_url(os.environ["BENCH_URL"])
    before, _, base_settled = settle(client, worker, SETTLE_TIMEOUT / 4)
    jobs = int(sizes["enqueue_jobs"])
    far = time.time() + FAR
    seconds = peer.enqueue([(f"e{i}", far + i / 1000) for i in range(jobs)])
    enqueued = stored_memory(client)
    after, waited, settled = settle(client, worker, SETTLE_TIMEOUT)
    records.poll()
    return {"jobs": jobs, "enqueue_s": seconds, "bytes_per_job": (after - before) / jobs,
            "bytes_per_job_at_enqueue_end": (enqueued - before) / jobs,
            "settle_s": waited, "settled": settled, "baseline_settled": base_settled,
            "settle_window_s": SETTLE_WINDOW, "settle_tolerance_bytes": SETTLE_TOLERANCE,
            "ran": sum(1 for job_id in records.starts if job_id.startswith("e")),
            "keys": client.dbsize(), "layout": layout(client)}


def _warm_up(peer: ModuleType, records: Records, worker: WorkerProcess) -> float:
    """A batch due now, waited for: the worker runs. Returns the enqueue rate seen (jobs/s)."""
    jobs = [(f"w{i}", time.time()) for i in range(WARM_UP_JOBS)]
    seconds = peer.enqueue(jobs)
    got = records.wait([j for j, _ in jobs], time.time() + 90, worker)
    if len(got) < WARM_UP_JOBS:
        raise RuntimeError(f"worker handled {len(got)} of {WARM_UP_JOBS} warm-up jobs in 90 s")
    return WARM_UP_JOBS / seconds


def run_drain(peer: ModuleType, worker: WorkerProcess, records: Records,
              sizes: dict[str, float]) -> dict[str, Any]:
    """``drain_jobs`` due at T0, one worker: jobs/s from T0 to the last handler start."""
    rate = _warm_up(peer, records, worker)
    count = int(sizes["drain_jobs"])
    t0 = time.time() + 1.5 + 1.3 * count / rate
    ids = [f"d{i}" for i in range(count)]
    enqueue_s = peer.enqueue([(i, t0) for i in ids])
    late_enqueue = time.time() - t0
    got = records.wait(ids, t0 + DRAIN_TIMEOUT, worker)
    seconds = max(got.values()) - t0 if got else float("nan")
    return {"jobs": count, "done": len(got), "seconds": seconds,
            "jobs_per_s": len(got) / seconds if got else 0.0, "timeout_s": DRAIN_TIMEOUT,
            "enqueue_s": enqueue_s, "enqueue_past_t0_s": max(0.0, late_enqueue),
            "early": sum(1 for s in got.values() if s < t0), "duplicates": records.duplicates,
            "min_ms": (min(got.values()) - t0) * 1000 if got else float("nan")}


def run_lateness(peer: ModuleType, worker: WorkerProcess, records: Records,
                 sizes: dict[str, float]) -> dict[str, Any]:
    """``lateness_rate`` due jobs/s for ``lateness_seconds``: handler start - due."""
    rate = _warm_up(peer, records, worker)
    per_s, span = int(sizes["lateness_rate"]), float(sizes["lateness_seconds"])
    count = int(per_s * span)
    t0 = time.time() + 1.5 + 1.3 * count / rate
    jobs = [(f"l{i}", t0 + i / per_s) for i in range(count)]
    peer.enqueue(jobs)
    late_enqueue = time.time() - t0
    got = records.wait([j for j, _ in jobs], t0 + span + LATENESS_TAIL, worker)
    lateness = [(got[j] - due) * 1000 for j, due in jobs if j in got]
    return {"jobs": count, "done": len(got), "rate": per_s,
            "p50_ms": percentile(lateness, 50), "p99_ms": percentile(lateness, 99),
            "max_ms": max(lateness, default=float("nan")),
            "min_ms": min(lateness, default=float("nan")),
            "early": sum(1 for x in lateness if x < 0), "timeout_s": LATENESS_TAIL,
            "enqueue_past_t0_s": max(0.0, late_enqueue), "duplicates": records.duplicates}


WORKER_WORKLOADS = {"memory": run_memory, "drain": run_drain, "lateness": run_lateness,
                    "drain1": run_drain}
# The drain again with every library's worker at concurrency 1 (each module's ONE_AT_A_TIME
# says how): the other rows run each library's defaults, 32 handlers for streamdelay against
# one for BullMQ and Celery, so this row compares them at matched concurrency.
ONE_AT_A_TIME = ("drain1",)


def interpreter() -> dict[str, Any]:
    """The interpreter of this child (and of the worker it starts), and its redis-py."""
    try:
        hiredis: str | None = metadata.version("hiredis")
    except metadata.PackageNotFoundError:
        hiredis = None
    return {"python_exe": sys.executable, "redis_py": redis.__version__, "hiredis": hiredis}


def run(peer_name: str, workload: str, sizes: dict[str, float]) -> dict[str, Any]:
    """Start a fresh redis-server, load the peer module against it, run one workload."""
    logdir = Path(tempfile.mkdtemp(prefix=f"peer-{peer_name}-{workload}-"))
    with RedisServer() as server:
        os.environ.update(BENCH_URL=server.url, STREAMDELAY_URL=server.url,
                          BENCH_RECORDS=str(logdir / "records.txt"),
                          PYTHONPATH=os.pathsep.join([str(ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
        peer = importlib.import_module(f"benchmarks.peers.{PEERS[peer_name]}")
        client = server.client()
        result: dict[str, Any] = {"peer": peer_name, "workload": workload,
                                  "version": (peer.version() if hasattr(peer, "version")
                                              else metadata.version(peer.DIST)),
                                  "worker": " ".join(peer.WORKER_NOTE.split()),
                                  "load_at_start": os.getloadavg()[0], **interpreter()}
        if workload == "enqueue":
            result.update(run_enqueue(peer, client, int(sizes["enqueue_jobs"])))
        else:
            one = workload in ONE_AT_A_TIME  # every library's worker runs one job at a time
            if one:
                result["worker"] = " ".join(peer.ONE_AT_A_TIME.split())
            worker = WorkerProcess(peer.worker_command(one_at_a_time=one), dict(os.environ),
                                   logdir / "worker.log")
            try:
                records = Records(logdir / "records.txt")
                result.update(WORKER_WORKLOADS[workload](peer, worker, records, sizes))
            except Exception as exc:  # the table shows why, beside the worker and its load
                result["error"] = f"failed: {type(exc).__name__}: {exc}"
            finally:
                worker.stop()
        if hasattr(peer, "describe"):  # what code ran (streamdelay: this checkout's)
            result["code"] = peer.describe(client)
        result["redis"] = client.info("server")["redis_version"]
    return result


def _terminate(*_: object) -> None:
    raise SystemExit(143)  # unwinds the context managers: worker and redis-server stopped


def main() -> None:
    """Command line entry point (started by ``run.py``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", required=True, choices=sorted(PEERS))
    parser.add_argument("--workload", required=True, choices=["enqueue", *WORKER_WORKLOADS])
    parser.add_argument("--quick", action="store_true", help="the QUICK sizes (no docs)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    result = run(args.peer, args.workload, QUICK if args.quick else FULL)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
