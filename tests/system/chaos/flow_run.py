"""The workflow chaos run (docs/reliability.md#workflows): batches with ``on_success`` and
``on_complete`` callbacks and chains on a queue with several partitions, served by real
``streamdelay worker`` processes (each with its embedded dispatcher, which forwards the outboxes
of docs/workflows.md#across-partitions) that a controller kills with kill -9 at random and
restarts, while redis-server (``appendonly yes``, ``appendfsync always``) is killed with kill -9
once in the middle and started again from its append-only file on the same port and directory.

``python -m tests.system.chaos.flow_run --batches 90 --chains 100 --out chaos-results/flow``
(``make chaos-flow``, part of ``make chaos``). Exit status 1 when the verdict fails
(``tests/system/chaos/flow_verdict.py``).

Why ``appendfsync always``: the verdict holds the queue to "every callback enqueued exactly
once" across a kill -9 of Redis. With ``everysec`` Redis itself may drop up to a second of
writes it acknowledged (a batch's ``fired`` flag, an ack) and the queue would then, correctly
by what the restarted server holds, write a callback or run a job again: a loss of Redis's
durability, not of the queue's logic, which this run cannot tell apart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import streamdelay as sd
from tests.support.redis_server import RedisServer
from tests.system.chaos.flow_app import TOPIC, TTR
from tests.system.chaos.flow_verdict import FlowVerdict, Plan, judge_flow, read_runs, settle_state

QUEUE = "chaosflow"
ROOT = Path(__file__).resolve().parents[3]
RETRY_S = 120.0  # how long the producer repeats a refused call (the same ids: idempotent)


@dataclass
class FlowSettings:
    """Size and fault plan of one run."""

    batches: int = 90
    batch_size: int = 100
    chains: int = 100
    chain_length: int = 10
    partitions: int = 4
    workers: int = 3
    spread: float = 30.0
    kill_interval: float = 3.0
    kill_redis: bool = True
    seed: int = 1
    drain_timeout: float = 180.0
    out: Path = field(default_factory=lambda: Path("chaos-results/flow"))


def make_plan(settings: FlowSettings) -> Plan:
    """The ids: batch ``b<i>`` with members ``b<i>m<j>``, chain ``k<i>`` with links
    ``k<i>n<j>``."""
    return Plan(
        batches={f"b{i}": [f"b{i}m{j}" for j in range(settings.batch_size)]
                 for i in range(settings.batches)},
        chains=[[f"k{i}n{j}" for j in range(settings.chain_length)]
                for i in range(settings.chains)])


class Workers:
    """The ``streamdelay worker`` processes, restartable."""

    def __init__(self, url: str, settings: FlowSettings, history: Path) -> None:
        self.url, self.settings, self.history = url, settings, history
        self.log = (history.parent / "processes.log").open("ab")
        self.env = {**os.environ, "CHAOS_FLOW_URL": url, "CHAOS_FLOW_QUEUE": QUEUE,
                    "CHAOS_FLOW_OUT": str(history),
                    "STREAMDELAY_PARTITIONS": str(settings.partitions)}
        self.started = 0
        self.procs = [self._spawn() for _ in range(settings.workers)]

    def _spawn(self) -> subprocess.Popen[bytes]:
        self.started += 1
        args = [sys.executable, "-m", "streamdelay", "worker",
                "tests.system.chaos.flow_app:worker", "--url", self.url,
                "--partitions", str(self.settings.partitions), "--log-level", "warning"]
        return subprocess.Popen(args, cwd=ROOT, env=self.env, stdout=self.log, stderr=self.log)

    def kill_one(self, rng: random.Random) -> str:
        """kill -9 one worker and start a new one in its place."""
        index = rng.randrange(len(self.procs))
        victim = self.procs[index]
        victim.kill()
        victim.wait()
        self.procs[index] = self._spawn()
        return f"worker pid {victim.pid}"

    def stop(self) -> None:
        """SIGTERM every worker and wait."""
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.log.close()


class Controller(threading.Thread):
    """kill -9 of a random worker every ``kill_interval`` (about), and once, halfway through
    the spread, kill -9 of redis-server and a start from its AOF 1 s later."""

    def __init__(self, workers: Workers, server: RedisServer, settings: FlowSettings) -> None:
        super().__init__(daemon=True)
        self.workers, self.server, self.settings = workers, server, settings
        self.rng = random.Random(settings.seed + 1)
        self.events: list[dict[str, object]] = []
        self.halt = threading.Event()
        self.redis_killed = not settings.kill_redis

    def run(self) -> None:
        started = time.monotonic()
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.settings.kill_interval):
            at = time.time() * 1000
            if not self.redis_killed and time.monotonic() - started > self.settings.spread / 2:
                kind = "kill_redis"
                self.redis_killed = True
                self.server.kill()
                time.sleep(1.0)
                self.server.start()
                detail = "SIGKILL, restarted from its AOF after 1 s (same port and dir)"
            else:
                kind, detail = "kill_worker", self.workers.kill_one(self.rng)
            self.events.append({"at": at, "kind": kind, "detail": detail,
                                "end": time.time() * 1000})


def _repeat(call: object, what: str, refused: list[str]) -> bool:
    """Run ``call()`` until it answers (a refused call is repeated with the same ids: batch,
    chain and their members are idempotent by id, docs/workflows.md#batches)."""
    deadline = time.monotonic() + RETRY_S
    while True:
        try:
            call()  # type: ignore[operator]
            return True
        except sd.StreamdelayError as exc:
            if time.monotonic() > deadline:
                refused.append(f"{what}: {exc}")
                return False
            time.sleep(0.2)


def produce(url: str, settings: FlowSettings, plan: Plan, acknowledged: set[str],
            refused: list[str]) -> None:
    """Enqueue the batches and chains interleaved over the first half of the spread."""
    rng = random.Random(settings.seed)
    queue = sd.Queue(QUEUE, url=url, partitions=settings.partitions, retry_for=10, ttr=TTR,
                     max_attempts=100)
    order = [("b", bid) for bid in plan.batches] + [("k", str(i)) for i in range(len(plan.chains))]
    rng.shuffle(order)
    pause = (settings.spread / 2) / max(len(order), 1)
    started = time.monotonic()
    for n, (kind, key) in enumerate(order):
        if kind == "b":
            members = [sd.JobSpec(TOPIC, {"m": m}, id=m, delay=rng.uniform(0, 1.0))
                       for m in plan.batches[key]]
            done = _repeat(lambda bid=key, ms=members: queue.batch(  # type: ignore[misc]
                ms, id=bid, on_success=sd.JobSpec(TOPIC, {"cb": "success"}),
                on_complete=sd.JobSpec(TOPIC, {"cb": "complete"})), f"batch {key}", refused)
            if done:
                acknowledged.update([key, *plan.batches[key]])
        else:
            links = plan.chains[int(key)]
            done = _repeat(lambda ls=links: queue.chain(  # type: ignore[misc]
                [sd.JobSpec(TOPIC, {"l": link}, id=link) for link in ls]),
                f"chain {key}", refused)
            if done:
                acknowledged.update(links)
        time.sleep(max(0.0, started + (n + 1) * pause - time.monotonic()))
    queue.close()


def wait_for_drain(expected: set[str], history: Path, timeout: float) -> None:
    """Until every expected job has a recorded end, or the timeout passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ended = {str(r["id"]) for r in read_runs(history) if r["ev"] == "end"}
        if expected <= ended:
            return
        time.sleep(0.5)


def run_flow_chaos(settings: FlowSettings) -> FlowVerdict:
    """Run the whole scenario and return the verdict (also written to ``out/verdict.json``)."""
    plan = make_plan(settings)
    history = settings.out / "history"
    history.mkdir(parents=True, exist_ok=True)
    for old in history.glob("*"):
        old.unlink()
    acknowledged: set[str] = set()
    refused: list[str] = []
    began, began_wall = time.monotonic(), time.time()
    with RedisServer(persistent=True) as server:  # appendonly yes, appendfsync always
        workers = Workers(server.url, settings, history)
        controller = Controller(workers, server, settings)
        time.sleep(1.0)
        controller.start()
        started = time.monotonic()
        try:
            produce(server.url, settings, plan, acknowledged, refused)
            time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        finally:
            controller.halt.set()
            controller.join()
        expected = acknowledged | {f"{b}@{n}" for b in plan.batches if b in acknowledged
                                   for n in (1, 2)}
        wait_for_drain(expected - set(plan.batches), history, settings.drain_timeout)
        workers.stop()
        state = settle_state(server.url, QUEUE, settings.partitions, plan, acknowledged)
        verdict = judge_flow(plan, acknowledged, read_runs(history), controller.events, state)
    verdict.enqueue_refused = refused[:20]
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1), **asdict(settings),
        "out": str(settings.out), "worker_processes_started": workers.started,
        "redis": "appendonly yes, appendfsync always; kill -9, restarted from its AOF",
    }
    (settings.out / "verdict.json").write_text(
        json.dumps({"ok": verdict.ok, **asdict(verdict)}, indent=2, default=str))
    return verdict


def main() -> int:
    """Command line entry for ``make chaos-flow``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--chain-length", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--spread", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-results/flow"))
    args = parser.parse_args()
    settings = FlowSettings(batches=args.batches, batch_size=args.batch_size, chains=args.chains,
                            chain_length=args.chain_length, partitions=args.partitions,
                            spread=args.spread, seed=args.seed, out=args.out)
    verdict = run_flow_chaos(settings)
    summary = {"ok": verdict.ok, **{k: v for k, v in asdict(verdict).items() if k != "faults"}}
    print(json.dumps(summary, indent=2, default=str))
    print(f"verdict: {'PASS' if verdict.ok else 'FAIL'} (full record: {args.out}/verdict.json)")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
