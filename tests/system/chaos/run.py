"""The chaos run: producers, 3 workers with embedded dispatchers and 1 standalone dispatcher on a
durable redis-server, while a controller kills workers and dispatchers, drops connections, pauses
Redis, squeezes its memory (``--squeeze``) and once kills and restarts redis-server itself; some
jobs carry 64 KiB-1 MiB bodies (``--big-bodies``). A checker then reads the full history.

``python -m tests.system.chaos.run --jobs 20000 --spread 30 --out chaos-results`` (``make chaos``).
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
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import redis

import streamdelay as sd
from streamdelay.protocol.keys import PartitionKeys, partition_of
from tests.support.redis_server import RedisServer
from tests.system.chaos.app import BODY_OVERHEAD, job_body, job_id
from tests.system.chaos.verdict import Verdict, judge

TOPIC = "chaos"
QUEUE = "chaos"
ROOT = Path(__file__).resolve().parents[3]
SQUEEZE_SECONDS = 3.0
SQUEEZE_MARGIN = 256 << 10  # maxmemory = used_memory + this
OOM_TEXT = "used memory > 'maxmemory'"  # in Redis' OOM error reply
OOM_REFUSED = "redis is full (OOM"  # how streamdelay reports a script Redis refused for memory
BIG_MIN, BIG_MAX = 64 << 10, (1 << 20) - BODY_OVERHEAD


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
    squeeze: bool = False  # the maxmemory squeeze among the fault kinds
    big_bodies: int = 0  # jobs with 64 KiB-1 MiB bodies, enqueued in the middle third


@dataclass
class Production:
    """What the producer was told: due time per acknowledged id, refusals, big-body ids."""

    acknowledged: dict[str, int] = field(default_factory=dict)
    refused: int = 0
    refused_oom: int = 0
    big: list[str] = field(default_factory=list)


class Processes:
    """The processes under test: workers and a standalone dispatcher, restartable."""

    def __init__(self, url: str, queue: str, history: Path, workers: int) -> None:
        self.url, self.queue = url, queue
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
        args = [sys.executable, "-m", "tests.system.chaos.app", role, self.url, self.queue]
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

    def __init__(self, processes: Processes, server: RedisServer, settings: Settings,
                 rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.processes, self.server, self.settings, self.rng = processes, server, settings, rng
        self.events: list[dict[str, object]] = []
        self.halt = threading.Event()
        self.redis_killed = not settings.kill_redis
        self.squeezed = not settings.squeeze

    def run(self) -> None:
        # Rounds of every kind in a shuffled order, so even a short run sees each kind once;
        # on top come a first squeeze at a quarter of the spread (while producers still write)
        # and the one Redis kill halfway through.
        kinds = ["kill_worker", "kill_dispatcher", "client_kill", "client_pause", "debug_sleep",
                 *(["maxmemory"] if self.settings.squeeze else [])]
        upcoming: list[str] = []
        started = time.monotonic()
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.settings.fault_interval):
            elapsed = time.monotonic() - started
            if not self.redis_killed and elapsed > self.settings.spread / 2:
                kind = "kill_redis"
            elif not self.squeezed and elapsed > self.settings.spread / 4:
                kind = "maxmemory"
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
        client = self.server.client()
        if kind == "kill_worker":
            return self.processes.kill_worker(self.rng)
        if kind == "kill_dispatcher":
            return self.processes.kill_dispatcher()
        if kind == "maxmemory":
            self.squeezed = True
            return squeeze_memory(client, SQUEEZE_SECONDS)
        if kind == "client_kill":
            return f"{client.client_kill_filter(_type='normal', skipme=True)} connections"
        if kind == "client_pause":
            client.execute_command("CLIENT", "PAUSE", 700, "ALL")
            return "700 ms"
        if kind == "debug_sleep":
            client.execute_command("DEBUG", "SLEEP", "0.5")
            return "500 ms"
        self.redis_killed = True
        self.server.kill()
        time.sleep(1.0)
        self.server.start()
        return "SIGKILL, restarted from AOF after 1 s"


def squeeze_memory(client: redis.Redis, seconds: float) -> str:
    """``maxmemory`` just above ``used_memory`` (policy ``noeviction``) for ``seconds``, then
    back. A probe writes 64 KiB keys of its own until Redis refuses one with ``OOM``, so the
    squeeze bites even when no producer writes; without such a refusal it was not injected."""
    before = str(client.config_get("maxmemory")["maxmemory"])
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", used + SQUEEZE_MARGIN)
    started, refused, probes = time.monotonic(), 0, 0
    first_refusal: float | None = None
    try:
        while time.monotonic() - started < seconds:
            try:
                client.set(f"chaos:probe:{probes}", b"x" * (64 << 10))
                probes += 1
            except redis.exceptions.OutOfMemoryError:
                refused += 1
                first_refusal = first_refusal or time.monotonic() - started
            time.sleep(0.1)
    finally:
        client.config_set("maxmemory", before)
        if probes:
            client.delete(*(f"chaos:probe:{n}" for n in range(probes)))
    if first_refusal is None:
        return f"not injected: no write refused with maxmemory {used + SQUEEZE_MARGIN}"
    return (f"maxmemory {used + SQUEEZE_MARGIN} (used_memory + 256 KiB) for {seconds:g} s: "
            f"first OOM refusal after {first_refusal * 1000:.0f} ms, {refused} probe writes "
            f"refused, restored to {before}")


def big_numbers(settings: Settings, rng: random.Random) -> set[int]:
    """Which job numbers get a 64 KiB-1 MiB body: ``big_bodies`` of the middle third."""
    third = range(settings.jobs // 3, 2 * settings.jobs // 3)
    return set(rng.sample(third, min(settings.big_bodies, len(third))))


def produce(url: str, queue_name: str, settings: Settings, rng: random.Random,
            production: Production) -> None:
    """Enqueue the jobs in batches of 20 over the first half of the spread; count refusals.

    A refused call is not a promise: its jobs are not acknowledged (``OOM`` refusals, Redis out
    of memory in a squeeze, are counted apart from the others).
    """
    queue = sd.Queue(queue_name, url=url, retry_for=60, ttr=3, max_attempts=50)
    big = big_numbers(settings, rng)
    batch = 20
    pause = (settings.spread / 2) / max(settings.jobs / batch, 1)
    started = time.monotonic()
    for start in range(0, settings.jobs, batch):
        # Due somewhere between now and the end of the spread (random order, not sorted), so
        # every job falls due while the controller is still injecting faults.
        left = max(0.4, settings.spread - (time.monotonic() - started))
        numbers = range(start, min(start + batch, settings.jobs))
        specs = [sd.JobSpec(TOPIC, job_body(n, rng.randint(BIG_MIN, BIG_MAX) if n in big else 0,
                                            rng),
                            id=job_id(n), delay=rng.uniform(0.2, left)) for n in numbers]
        production.big += [job_id(n) for n in numbers if n in big]
        try:
            for result in queue.enqueue_many(specs):
                production.acknowledged[result.id] = result.due
        except sd.StreamdelayError as exc:
            if OOM_TEXT in str(exc) or OOM_REFUSED in str(exc):
                production.refused_oom += len(specs)
            else:
                production.refused += len(specs)
        # Paced on the clock, not by a fixed sleep, so a slow round trip does not stretch the run.
        time.sleep(max(0.0, started + (start // batch + 1) * pause - time.monotonic()))
    queue.close()


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


def where_lost(url: str, queue_name: str, ids: list[str]) -> dict[str, str]:
    """Where each lost job is in Redis after the run: its record's header (``state|attempts|
    due|created|ttr|max|entry|topic``) and whether the delayed set holds it, or no record."""
    queue = sd.Queue(queue_name, url=url)
    found: dict[str, str] = {}
    for job in ids:
        keys = PartitionKeys(queue_name, partition_of(job, queue.config.partitions))
        record = queue.client.hget(keys.jobs, job)
        if record is None:
            found[job] = "no record"
            continue
        header = bytes(record).split(b"|", 8)[:8]
        in_delayed = queue.client.zscore(keys.delayed, job) is not None
        found[job] = f"record {b'|'.join(header).decode()}, in delayed set: {in_delayed}"
    queue.close()
    return found


def locate_lost(verdict: Verdict, url: str, queue_name: str,
                acknowledged: dict[str, int], history: Path) -> None:
    """Fill ``lost_where`` (20 examples) and ``lost_states`` (every lost job, by record state
    and whether it is in the delayed set) from what Redis holds after the run."""
    handled = {str(run["id"]) for run in read_history(history)}
    where = where_lost(url, queue_name, sorted(set(acknowledged) - handled))
    verdict.lost_where = dict(list(where.items())[:20])
    verdict.lost_states = dict(Counter(
        "no record" if text == "no record"
        else f"state {text.split()[1][0]}, in delayed set: {text.rsplit(' ', 1)[1]}"
        for text in where.values()))


def fresh_history(out: Path) -> Path:
    """``out/history``, created and emptied."""
    history = out / "history"
    history.mkdir(parents=True, exist_ok=True)
    for old in history.glob("*"):
        old.unlink()
    return history


def write_record(out: Path, verdict: Verdict, production: Production) -> None:
    """``verdict.json`` (with every fault) and ``acknowledged.json`` under ``out``."""
    record = {"ok": verdict.ok, **asdict(verdict)}
    (out / "verdict.json").write_text(json.dumps(record, indent=2))
    (out / "acknowledged.json").write_text(json.dumps(production.acknowledged))


def run_chaos(settings: Settings) -> Verdict:
    """Run the whole scenario and return the checked verdict (also written to ``settings.out``)."""
    rng = random.Random(settings.seed)
    history = fresh_history(settings.out)
    production = Production()
    began, began_wall = time.monotonic(), time.time()
    with RedisServer("--enable-debug-command", "local", "--maxmemory-policy", "noeviction",
                     persistent=True) as server:
        processes = Processes(server.url, QUEUE, history, settings.workers)
        controller = Controller(processes, server, settings, random.Random(settings.seed + 1))
        time.sleep(1.0)
        controller.start()
        started = time.monotonic()
        try:
            produce(server.url, QUEUE, settings, rng, production)
            time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        finally:
            controller.halt.set()
            controller.join()
        wait_for_drain(production.acknowledged, history, settings.drain_timeout)
        processes.stop()
        verdict = judge(production.acknowledged, read_history(history), controller.events,
                        production.refused, refused_oom=production.refused_oom,
                        big=production.big)
        locate_lost(verdict, server.url, QUEUE, production.acknowledged, history)
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1),
        "jobs": settings.jobs, "spread_s": settings.spread, "seed": settings.seed,
        "worker_processes": settings.workers, "embedded_dispatchers": settings.workers,
        "standalone_dispatchers": 1, "squeeze": settings.squeeze,
        "big_bodies_planned": settings.big_bodies,
        "processes_started": processes.started,
    }
    write_record(settings.out, verdict, production)
    return verdict


def print_summary(verdict: Verdict, out: Path) -> None:
    """The verdict without its fault list, and PASS / FAIL."""
    summary = {"ok": verdict.ok, **{k: v for k, v in asdict(verdict).items() if k != "faults"}}
    print(json.dumps(summary, indent=2))
    print(f"verdict: {'PASS' if verdict.ok else 'FAIL'} (full record: {out}/verdict.json)")


def main() -> int:
    """Command line entry for ``make chaos``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--spread", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-results"))
    parser.add_argument("--squeeze", action=argparse.BooleanOptionalAction, default=True,
                        help="maxmemory squeezes among the faults (default on)")
    parser.add_argument("--big-bodies", type=int, default=150,
                        help="jobs with 64 KiB-1 MiB bodies (default 150)")
    args = parser.parse_args()
    settings = Settings(jobs=args.jobs, spread=args.spread, seed=args.seed, out=args.out,
                        drain_timeout=60.0, squeeze=args.squeeze, big_bodies=args.big_bodies)
    verdict = run_chaos(settings)
    print_summary(verdict, args.out)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
