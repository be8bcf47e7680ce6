"""The HTTP consumers chaos run: a producer enqueues delayed jobs into a durable redis-server;
one ``streamdelay serve`` (with its dispatchers) and one standalone dispatcher; several HTTP
consumer processes (tests/system/chaos/http_client.py) reserve and ack over plain HTTP, and some of
their long polls hang up without reading an answer; a controller kills ``serve`` with SIGKILL
at random moments (every poll is mid-wait then) and starts it again on the same port. The
checker (tests/system/chaos/verdict.py) then reads every consumer's history: no acknowledged job
lost,
none early, and every second run explained (``explain_http``). A consumer process that exits
before the run stops it is named (``setup["consumers_exited_early"]``) and fails the run: the
jobs it had not written down would otherwise count as lost.

``python -m tests.system.chaos.http_run --jobs 5000 --spread 30 --out chaos-results/http``
(``make chaos-http``). Exit status 1 when the verdict fails (see ``Verdict.ok``).
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
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tests.support.redis_server import RedisServer, free_port
from tests.system.chaos.run import (
    ROOT,
    Production,
    Settings,
    fresh_history,
    locate_lost,
    print_summary,
    produce,
    read_history,
    wait_for_drain,
    write_record,
)
from tests.system.chaos.verdict import TTR_MS, Run, Verdict, judge

QUEUE = "chaoshttp"
TOKEN = "chaos-" + "e5" * 12
DOWN_S = (0.2, 1.0)  # how long serve stays dead after a kill
STALE_MARGIN_MS = 500  # a 409 this much before the ttr ran out cannot be a reclaim


def explain_http(first: Run, second: Run, faults: Sequence[dict[str, object]]) -> str:
    """The cause of a second run of a job, from how the first run's ack ended.

    An ack answered 200 means the job is done: a second run is unexplained. A first run whose
    ack found no service (``lost``) or a stale receipt after a ``serve`` kill between the two
    runs is explained by that kill (the ack was lost with the process, or the job came back
    after its ttr while ``serve`` was down). A stale ack without a kill is explained only when
    the ttr had run out (``ttr_passed``: a consumer slower than the ttr loses its job, the
    promise of docs/http.md#consumers); a delivery that went stale sooner is unexplained."""
    outcome = str(first.get("ack", ""))
    if outcome == "acked":
        return "unexplained"
    start, again = float(first["start"]), float(second["start"])
    if any(f["kind"] == "kill_serve" and start - TTR_MS <= float(f["at"]) <= again  # type: ignore[arg-type]
           for f in faults):
        return "kill_serve"
    if outcome == "stale" and float(first["ack_at"]) - start >= TTR_MS - STALE_MARGIN_MS:
        return "ttr_passed"
    return "unexplained"


class Serve:
    """One ``streamdelay serve`` on a fixed port, killed and started again."""

    def __init__(self, url: str, out: Path) -> None:
        self.url, self.port = url, free_port()
        self.log = (out / "serve.log").open("ab")
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0

    @property
    def base(self) -> str:
        """The base URL the consumers use."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start and wait for /healthz; the seconds it took."""
        began = time.monotonic()
        env = {**os.environ, "STREAMDELAY_TOKENS": f"chaos:{TOKEN}:consume,read"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "streamdelay", "serve", "--url", self.url, "--queue", QUEUE,
             "--host", "127.0.0.1", "--port", str(self.port), "--log-format", "json"],
            cwd=ROOT, stdout=self.log, stderr=self.log, env=env)
        self.started += 1
        while time.monotonic() - began < 30:
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return time.monotonic() - began
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("streamdelay serve did not start (see serve.log)")

    def kill(self) -> int:
        """SIGKILL; the pid it had."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        return self.process.pid

    def stop(self) -> None:
        """SIGTERM and wait."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


class Killer(threading.Thread):
    """Kills ``serve`` with SIGKILL every ``interval`` seconds or so, and starts it again."""

    def __init__(self, serve: Serve, interval: float, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.serve, self.interval, self.rng = serve, interval, rng
        self.events: list[dict[str, object]] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.rng.uniform(0.5, 1.5) * self.interval):
            at = time.time() * 1000
            pid = self.serve.kill()
            time.sleep(self.rng.uniform(*DOWN_S))
            took = self.serve.start()
            self.events.append({"at": at, "kind": "kill_serve", "end": time.time() * 1000,
                                "detail": f"serve pid {pid} killed mid-poll (-9), serving "
                                          f"again after {(time.time() * 1000 - at) / 1000:.1f} "
                                          f"s (start {took:.1f} s)"})


def count_lines(history: Path, pattern: str) -> int:
    """Lines of the files matching ``pattern`` in ``history``."""
    return sum(len(path.read_text().splitlines()) for path in history.glob(pattern))


def handed_back(log: Path) -> dict[str, int]:
    """What serve logged handing back: jobs, per reason."""
    found: dict[str, int] = {}
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = str(json.loads(line).get("event", ""))
        except ValueError:
            continue
        if event.startswith("reserve: ") and " job(s) handed back" in event:
            why = event.removeprefix("reserve: ").split(";")[0]
            count = int(event.split("; ")[1].split(" ")[0])
            found[why] = found.get(why, 0) + count
    return found


def run_http_chaos(settings: Settings, clients: int = 4, hangup_rate: float = 0.1,
                   kill_interval: float = 3.0) -> Verdict:
    """Run the scenario and return the checked verdict (also written to ``settings.out``)."""
    rng = random.Random(settings.seed)
    history = fresh_history(settings.out)
    (settings.out / "serve.log").unlink(missing_ok=True)
    production = Production()
    began, began_wall = time.monotonic(), time.time()
    with RedisServer(persistent=True) as server:
        serve = Serve(server.url, settings.out)
        serve.start()
        log = (history / "processes.log").open("ab")
        dispatcher = subprocess.Popen([sys.executable, "-m", "tests.system.chaos.app", "dispatch",
                                       server.url, QUEUE], cwd=ROOT, stdout=log, stderr=log)
        consumers = [subprocess.Popen(
            [sys.executable, "-m", "tests.system.chaos.http_client", serve.base, TOKEN, QUEUE,
             str(history), str(settings.seed * 100 + n), str(hangup_rate)],
            cwd=ROOT, stdout=log, stderr=log) for n in range(clients)]
        killer = Killer(serve, kill_interval, random.Random(settings.seed + 1))
        time.sleep(1.0)
        killer.start()
        started = time.monotonic()
        try:
            produce(server.url, QUEUE, settings, rng, production)
            time.sleep(max(0.0, settings.spread - (time.monotonic() - started)))
        finally:
            killer.halt.set()
            killer.join()
        wait_for_drain(production.acknowledged, history, settings.drain_timeout)
        # a consumer that died on its own took the deliveries it had not written down with
        # it: its jobs would count as lost (see processes.log); the run names it instead
        exited_early = [{"pid": process.pid, "returncode": process.returncode}
                        for process in consumers if process.poll() is not None]
        for process in [*consumers, dispatcher]:
            process.terminate()
        for process in [*consumers, dispatcher]:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
        serve.stop()
        log.close()
        runs = read_history(history)
        verdict = judge(production.acknowledged, runs, killer.events, production.refused,
                        explainer=explain_http)
        locate_lost(verdict, server.url, QUEUE, production.acknowledged, history)
    acks: dict[str, int] = {}
    first_attempt: dict[str, int] = {}
    for run in runs:
        acks[str(run.get("ack"))] = acks.get(str(run.get("ack")), 0) + 1
        job = str(run["id"])
        first_attempt[job] = min(first_attempt.get(job, 1 << 30), int(run["attempt"]))
    verdict.setup = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began_wall)),
        "run_seconds": round(time.monotonic() - began, 1),
        "jobs": settings.jobs, "spread_s": settings.spread, "seed": settings.seed,
        "http_consumer_processes": clients, "standalone_dispatchers": 1,
        "consumers_exited_early": exited_early,
        "serve_started": serve.started, "hangup_rate": hangup_rate,
        "polls_hung_up": count_lines(history, "hangups-*.jsonl"),
        "jobs_handed_back_by_serve": handed_back(settings.out / "serve.log"),
        "ack_outcomes": acks,
        # deliveries no consumer ever got (answers lost with a killed serve, or sent to a
        # consumer that hung up without reading): each cost its job an attempt and a ttr
        "attempts_spent_before_the_first_run": sum(a - 1 for a in first_attempt.values()),
    }
    write_record(settings.out, verdict, production)
    return verdict


def main() -> int:
    """Command line entry for ``make chaos-http``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--spread", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("chaos-results/http"))
    args = parser.parse_args()
    settings = Settings(jobs=args.jobs, spread=args.spread, seed=args.seed, out=args.out,
                        drain_timeout=60.0)
    verdict = run_http_chaos(settings, clients=args.clients)
    print_summary(verdict, args.out)
    if verdict.setup["consumers_exited_early"]:
        print(f"consumers exited before the end (see {args.out}/history/processes.log): "
              f"{verdict.setup['consumers_exited_early']}")
        return 1
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
