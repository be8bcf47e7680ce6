"""The rig of "never twice at once" across outages (docs/guarantees.md#never-twice-at-once):
two real worker processes (``tests/support/apps/reliability_app.py``) run 40 jobs of 6 s with a
ttr of 3 s, and in each trial either redis-server (``appendonly yes``) is killed with -9 and
restarted from its AOF on the same port 2 s later, or one worker is cut off from Redis for a
moment shorter than the ttr (a veth pair into a network namespace, its host end set down). Every
handler run records its start and end (job id, attempt, pid, time); a job whose two runs
overlap in time ran twice at once.

``tests/system/test_outage_overlap.py`` runs two trials of each; ``make outage-trials`` runs 20
of each (``python -m tests.support.outage_rig --trials 20``) and prints the overlaps per trial.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import streamdelay as sd
from tests.support.apps.reliability_app import ROOT, Event, WorkerProcess, read_events
from tests.support.redis_server import RedisServer

TTR = 3.0
JOB_S = 6.0
JOBS = 40
OUTAGE_S = 2.0  # Redis down between the kill and the restart
# The cut-off of one worker: shorter than the ttr by the heartbeat interval (ttr / 3) and the
# reconnect, the bound docs/guarantees.md#never-twice-at-once states (2/3 ttr - 0.5 s), with
# room for a loaded host's event-loop lag
PARTITION_S = 1.0


def overlapping(events: list[Event], ids: set[str]) -> set[str]:
    """The jobs of ``ids`` two of whose runs (start to done, or to now when not done) overlap
    in time."""
    runs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    open_runs: dict[tuple[str, int, int], float] = {}
    for e in events:
        if e.id not in ids:
            continue
        if e.ev == "start":
            open_runs[(e.id, e.pid, e.attempt)] = e.t
        elif e.ev in ("done", "cancelled") and (e.id, e.pid, e.attempt) in open_runs:
            runs[e.id].append((open_runs.pop((e.id, e.pid, e.attempt)), e.t))
    for (job, _, _), began in open_runs.items():
        runs[job].append((began, float("inf")))
    both = set()
    for job, spans in runs.items():
        spans.sort()
        if any(later[0] < earlier[1] for earlier, later in pairwise(spans)):
            both.add(job)
    return both


@dataclass
class Trial:
    """What one trial saw: jobs run twice at once, jobs run more than once, and the time."""

    overlapping: int
    reruns: int
    seconds: float


class Rig:
    """Two worker processes of one queue on ``server``; ``first_prefix`` runs the first one
    inside a network namespace (``ip netns exec``) with its own URL."""

    def __init__(self, server: RedisServer, out_dir: Path, first_url: str | None = None,
                 first_prefix: tuple[str, ...] = ()) -> None:
        self.server, self.out_dir = server, out_dir
        self.queue_name = f"outage-{uuid.uuid4().hex[:8]}"
        options = ("--ttr", str(TTR), "--reclaim", "1", "--concurrency", "32")
        self.workers = [
            _worker(first_url or server.url, self.queue_name, out_dir, "a", options,
                    first_prefix),
            _worker(server.url, self.queue_name, out_dir, "b", options, ()),
        ]
        for worker in self.workers:
            worker.wait_ready(60)
        self.queue = sd.Queue(self.queue_name, url=server.url, ttr=TTR)

    def close(self) -> None:
        """Kill the workers, close the producer."""
        for worker in self.workers:
            worker.stop()
        self.queue.close()

    def trial(self, fault: Callable[[], None]) -> Trial:
        """Enqueue 40 jobs, let them all start, apply ``fault``, wait until every job is done
        (acknowledged: gone from the queue), then count."""
        began = time.monotonic()
        tag = uuid.uuid4().hex[:6]
        ids = {f"{tag}-{i}" for i in range(JOBS)}
        self.queue.enqueue_many([sd.JobSpec("slow", {"seconds": JOB_S}, id=job, ttr=TTR)
                                 for job in sorted(ids)])
        _wait(lambda: ids <= {e.id for e in read_events(self.out_dir) if e.ev == "start"},
              30, "every job started")
        time.sleep(random.uniform(0.1, 1.1))  # any phase of the heartbeats (every ttr / 3)
        fault()
        _wait(lambda: self._all_done(ids), 90, "every job done")
        events = read_events(self.out_dir)
        starts: dict[str, int] = defaultdict(int)
        for e in events:
            if e.ev == "start" and e.id in ids:
                starts[e.id] += 1
        return Trial(len(overlapping(events, ids)), sum(1 for n in starts.values() if n > 1),
                     time.monotonic() - began)

    def _all_done(self, ids: set[str]) -> bool:
        events = read_events(self.out_dir)
        started = {(e.id, e.pid, e.attempt) for e in events if e.ev == "start" and e.id in ids}
        done = {(e.id, e.pid, e.attempt) for e in events if e.ev == "done" and e.id in ids}
        if not started <= done or not ids <= {e[0] for e in done}:
            return False
        try:
            return all(self.queue.get(job) is None for job in ids)
        except sd.StreamdelayError:
            return False


def _worker(url: str, queue: str, out_dir: Path, name: str, options: tuple[str, ...],
            prefix: tuple[str, ...]) -> WorkerProcess:
    """A ``reliability_app`` worker process, run under ``prefix`` (``ip netns exec NS``)."""
    if not prefix:
        return WorkerProcess(url, queue, out_dir, name, *options)
    worker = WorkerProcess.__new__(WorkerProcess)
    worker.url, worker.queue, worker.consumer, worker.out_dir = url, queue, name, out_dir
    worker.log_path = out_dir / f"{name}.log"
    args = [*prefix, sys.executable, "-m", "tests.support.apps.reliability_app", url, queue,
            str(out_dir), "--consumer", name, *options]
    with worker.log_path.open("ab") as log:
        worker.process = subprocess.Popen(args, cwd=ROOT, stdout=log, stderr=log)
    return worker


def _wait(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.1)


# --- the faults ----------------------------------------------------------------------------

def restart_trials(trials: int, out_dir: Path) -> list[Trial]:
    """``trials`` trials of Redis killed with -9 and restarted from its AOF 2 s later."""
    server = RedisServer(persistent=True).start()
    rig = None
    try:
        rig = Rig(server, out_dir)

        def outage() -> None:
            server.kill()
            time.sleep(OUTAGE_S)
            server.start()

        return [rig.trial(outage) for _ in range(trials)]
    finally:
        if rig is not None:
            rig.close()
        server.stop()


def netns_available() -> str:
    """Why the partition trials cannot run here ('' when they can: root and ``ip``)."""
    if os.geteuid() != 0:
        return "the partition trials need root (ip netns, veth pairs)"
    if shutil.which("ip") is None:
        return "the partition trials need the ip command (iproute2)"
    return ""


def _ip(*args: str, check: bool = True) -> None:
    subprocess.run(["ip", *args], check=check, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL if not check else None, timeout=10)


@contextmanager
def veth_namespace() -> Iterator[tuple[str, str, str]]:
    """A network namespace joined to this one by a veth pair on a private /30 of 10.213.0.0/16:
    (namespace, host end, host address). Always removed again (the namespace with its end)."""
    n = random.randrange(1, 250)
    tag = f"{os.getpid() % 10000}x{n}"
    ns, host, inner = f"sdpart{tag}", f"sdh{tag}", f"sdn{tag}"
    host_ip, inner_ip = f"10.213.{n}.1", f"10.213.{n}.2"
    try:
        _ip("netns", "add", ns)
        _ip("link", "add", host, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", ns)
        _ip("addr", "add", f"{host_ip}/30", "dev", host)
        _ip("link", "set", host, "up")
        _ip("-n", ns, "addr", "add", f"{inner_ip}/30", "dev", inner)
        _ip("-n", ns, "link", "set", inner, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        yield ns, host, host_ip
    finally:
        _ip("link", "del", host, check=False)
        _ip("netns", "del", ns, check=False)


def partition_trials(trials: int, out_dir: Path, seconds: float = PARTITION_S) -> list[Trial]:
    """``trials`` trials of the first worker cut off from Redis for ``seconds`` (its veth's
    host end down: its packets are dropped, nothing tells it)."""
    with veth_namespace() as (ns, host, host_ip):
        server = RedisServer("--bind", "127.0.0.1", host_ip, "--protected-mode", "no",
                             persistent=True).start()
        rig = None
        try:
            rig = Rig(server, out_dir, f"redis://{host_ip}:{server.port}/0",
                      ("ip", "netns", "exec", ns))

            def cut() -> None:
                _ip("link", "set", host, "down")
                try:
                    time.sleep(seconds)
                finally:
                    _ip("link", "set", host, "up")

            return [rig.trial(cut) for _ in range(trials)]
        finally:
            if rig is not None:
                rig.close()
            server.stop()


def report(kind: str, trials: list[Trial]) -> str:
    """One line per trial and the total, as ``make outage-trials`` prints them."""
    lines = [f"{kind} trial {i}: {t.overlapping} of {JOBS} jobs ran twice at once, "
             f"{t.reruns} ran more than once ({t.seconds:.1f} s)" for i, t in enumerate(trials, 1)]
    total = sum(t.overlapping for t in trials)
    hit = sum(1 for t in trials if t.overlapping)
    lines.append(f"{kind}: {total} overlapping runs in {len(trials)} trials "
                 f"({hit} trials with any)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Run the trials; exit 1 when any job ran twice at once."""
    parser = argparse.ArgumentParser(prog="outage_rig")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--kind", choices=("restart", "partition", "both"), default="both")
    parser.add_argument("--partition-s", type=float, default=PARTITION_S)
    parser.add_argument("--out", default=None, help="keep the workers' records and logs here")
    args = parser.parse_args(argv)
    overlaps = 0
    with tempfile.TemporaryDirectory(prefix="sd-outage-") as scratch:
        tmp = args.out or scratch
        if args.kind in ("restart", "both"):
            out = Path(tmp, "restart")
            out.mkdir(parents=True)
            found = restart_trials(args.trials, out)
            print(report("redis restart", found), flush=True)
            overlaps += sum(t.overlapping for t in found)
        if args.kind in ("partition", "both"):
            if (why := netns_available()):
                print(f"partition trials not run: {why}")
                return 2
            out = Path(tmp, "partition")
            out.mkdir(parents=True)
            found = partition_trials(args.trials, out, args.partition_s)
            print(report(f"partition {args.partition_s:g}s", found), flush=True)
            overlaps += sum(t.overlapping for t in found)
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
