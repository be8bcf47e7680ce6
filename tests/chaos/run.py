"""The chaos run: producers, 3 workers with embedded dispatchers and 1 standalone dispatcher on a
durable redis-server, while a controller kills workers and dispatchers, drops connections, pauses
Redis and once kills and restarts redis-server itself. A checker then reads the full history.

``python -m tests.chaos.run --jobs 20000 --spread 30 --out chaos-results`` (``make chaos``).
Exit status 1 when the verdict fails (see ``Verdict.ok``), so ``make chaos`` fails too.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import redis

import streamdelay as sd
from tests.chaos.verdict import Verdict, judge
from tests.redis_server import RedisServer

TOPIC = "chaos"
QUEUE = "chaos"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Settings:
    """Size and fault plan of one run."""

    jobs: int = 2000
    spread: float = 15.0
    workers: int = 3
    fault_interval: float = 1.5
    kill_redis: bool = True
    seed: int = 1
    drain_timeout: float = 60.0
    out: Path = field(default_factory=lambda: Path("chaos-results"))


class Cluster:
    """The processes under test: workers and a standalone dispatcher, restartable."""

    def __init__(self, server: RedisServer, history: Path, workers: int) -> None:
        self.server = server
        self.history = history
        self.workers: list[subprocess.Popen[bytes]] = []
        self.dispatcher: subprocess.Popen[bytes] | None = None
        self.log = (history / "processes.log").open("ab")
        self.started: dict[str, int] = {}
        for _ in range(workers):
            self.workers.append(self._spawn("worker"))
        self.dispatcher = self._spawn("dispatch")

    def _spawn(self, role: str) -> subprocess.Popen[bytes]:
        self.started[role] = self.started.get(role, 0) + 1
        args = [sys.executable, "-m", "tests.chaos.app", role, self.server.url, QUEUE]
        if role == "worker":
            args.append(str(self.history))
        return subprocess.Popen(args, cwd=ROOT, stdout=self.log, stderr=self.log)

    def kill_worker(self, rng: random.Random) -> str:
        """SIGKILL one worker and start a new one in its place."""
        index = rng.randrange(len(self.workers))
        victim = self.workers[index]
        victim.kill()
        victim.wait()
        self.workers[index] = self._spawn("worker")
        return f"worker pid {victim.pid}"

    def kill_dispatcher(self) -> str:
        """SIGKILL the standalone dispatcher and start a new one."""
        assert self.dispatcher is not None
        self.dispatcher.kill()
        self.dispatcher.wait()
        pid = self.dispatcher.pid
        self.dispatcher = self._spawn("dispatch")
        return f"dispatcher pid {pid}"

    def stop(self) -> None:
        """SIGTERM everything and wait."""
        procs = [*self.workers, *([self.dispatcher] if self.dispatcher else [])]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.log.close()


class Controller(threading.Thread):
    """Injects faults at random moments until told to stop; records each with its time."""

    def __init__(self, cluster: Cluster, settings: Settings, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.cluster, self.settings, self.rng = cluster, settings, rng
        self.events: list[dict[str, object]] = []
        self.halt = threading.Event()
        self.redis_killed = not settings.kill_redis

    def run(self) -> None:
        # Rounds of every kind in a shuffled order, so even a short run sees each kind once;
        # the one Redis kill comes on top, halfway through.
        kinds = ["kill_worker", "kill_dispatcher", "client_kill", "client_pause", "debug_sleep"]
        upcoming: list[str] = []
        started = time.monotonic()
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.settings.fault_interval):
            if not self.redis_killed and time.monotonic() - started > self.settings.spread / 2:
                kind = "kill_redis"
            else:
                if not upcoming:
                    upcoming = self.rng.sample(kinds, len(kinds))
                kind = upcoming.pop()
            at = time.time() * 1000
            try:
                detail = self._inject(kind)
            except (redis.RedisError, OSError) as exc:
                detail = f"not injected: {exc}"
            self.events.append({"at": at, "kind": kind, "detail": detail,
                                "end": time.time() * 1000})

    def _inject(self, kind: str) -> str:
        client = self.cluster.server.client()
        if kind == "kill_worker":
            return self.cluster.kill_worker(self.rng)
        if kind == "kill_dispatcher":
            return self.cluster.kill_dispatcher()
        if kind == "client_kill":
            return f"{client.client_kill_filter(_type='normal', skipme=True)} connections"
        if kind == "client_pause":
            client.execute_command("CLIENT", "PAUSE", 700, "ALL")
            return "700 ms"
        if kind == "debug_sleep":
            client.execute_command("DEBUG", "SLEEP", "0.5")
            return "500 ms"
        self.redis_killed = True
        self.cluster.server.kill()
        time.sleep(1.0)
        self.cluster.server.start()
        return "SIGKILL, restarted from AOF after 1 s"


def produce(url: str, settings: Settings, rng: random.Random,
            acknowledged: dict[str, int]) -> int:
    """Enqueue the jobs in batches of 20 over the first half of the spread; count refusals."""
    queue = sd.Queue(QUEUE, url=url, retry_for=60, ttr=3, max_attempts=50)
    refused = 0
    batch = 20
    pause = (settings.spread / 2) / max(settings.jobs / batch, 1)
    started = time.monotonic()
    for start in range(0, settings.jobs, batch):
        # Due somewhere between now and the end of the spread (random order, not sorted), so
        # every job falls due while the controller is still injecting faults.
        left = max(0.4, settings.spread - (time.monotonic() - started))
        specs = [sd.JobSpec(TOPIC, {"n": n}, id=f"c{n}", delay=rng.uniform(0.2, left))
                 for n in range(start, min(start + batch, settings.jobs))]
        try:
            for result in queue.enqueue_many(specs):
                acknowledged[result.id] = result.due
        except sd.StreamdelayError:
            refused += len(specs)
        # Paced on the clock, not by a fixed sleep, so a slow round trip does not stretch the run.
        time.sleep(max(0.0, started + (start // batch + 1) * pause - time.monotonic()))
    queue.close()
    return refused


def read_history(history: Path) -> list[dict[str, float | str | int]]:
    """Every handler start recorded by every worker process."""
    runs = []
    for path in sorted(history.glob("worker-*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                runs.append(json.loads(line))
    return runs


def wait_for_drain(acknowledged: dict[str, int], history: Path, timeout: float) -> None:
    """Wait until every acknowledged job has a recorded run, or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        handled = {str(run["id"]) for run in read_history(history)}
        if set(acknowledged) <= handled:
            return
        time.sleep(0.5)


def run_chaos(settings: Settings) -> Verdict:
    """Run the whole scenario and return the checked verdict (also written to ``settings.out``)."""
    rng = random.Random(settings.seed)
    settings.out.mkdir(parents=True, exist_ok=True)
    history = settings.out / "history"
    history.mkdir(exist_ok=True)
    for old in history.glob("*"):
        old.unlink()
    acknowledged: dict[str, int] = {}
    began, began_wall = time.monotonic(), time.time()
    with RedisServer("--enable-debug-command", "local", persistent=True) as server:
        cluster = Cluster(server, history, settings.workers)
        controller = Controller(cluster, settings, random.Random(settings.seed + 1))
        time.sleep(1.0)
        controller.start()
        started = time.monotonic()
        refused = produce(server.url, settings, rng, acknowledged)
        time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        controller.halt.set()
        controller.join()
        wait_for_drain(acknowledged, history, settings.drain_timeout)
        cluster.stop()
    runs = read_history(history)
    verdict = judge(acknowledged, runs, controller.events, refused)
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1),
        "jobs": settings.jobs, "spread_s": settings.spread, "seed": settings.seed,
        "worker_processes": settings.workers, "embedded_dispatchers": settings.workers,
        "standalone_dispatchers": 1,
        "processes_started": cluster.started,
    }
    record = {"ok": verdict.ok, **asdict(verdict)}
    (settings.out / "verdict.json").write_text(json.dumps(record, indent=2))
    (settings.out / "acknowledged.json").write_text(json.dumps(acknowledged))
    return verdict


def main() -> int:
    """Command line entry for ``make chaos``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--spread", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-results"))
    args = parser.parse_args()
    settings = Settings(jobs=args.jobs, spread=args.spread, seed=args.seed, out=args.out,
                        drain_timeout=120.0)
    verdict = run_chaos(settings)
    summary = {"ok": verdict.ok, **{k: v for k, v in asdict(verdict).items() if k != "faults"}}
    print(json.dumps(summary, indent=2))
    print(f"verdict: {'PASS' if verdict.ok else 'FAIL'} (full record: {args.out}/verdict.json)")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
