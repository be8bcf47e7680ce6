"""Shared parts of the benchmarks: Redis servers, worker processes, percentiles, tables.

Every benchmark starts its own ``redis-server`` on a free loopback port
(``tests/support/redis_server``)
and its workers through the real CLI (``python -m streamdelay worker``).
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

import streamdelay as sd  # noqa: E402
from benchmarks.core.stats import percentile  # noqa: E402
from streamdelay.protocol.keys import PartitionKeys  # noqa: E402
from tests.support.redis_server import RedisServer  # noqa: E402

__all__ = ["ROOT", "RedisServer", "percentile"]
TOPIC = "bench.job"
GROUP = "bench"
BODY = {"order_id": 42, "pad": "x" * 80}  # the ~100 bytes of JSON of most benchmarks


NOT_MEASURED = "not measured"
LISTED_TARGET = "listed-target:"  # key prefix of a section's verdict the Targets list shows too


@dataclass(frozen=True)
class Check:
    """One judged claim: ``met`` is None when the run produced no figure to judge it by."""

    name: str
    met: bool | None
    figure: str
    key: str = ""  # how the report's prose refers to it ("" for none)

    @property
    def state(self) -> str:
        """``met``, ``NOT met`` or ``not measured``."""
        return NOT_MEASURED if self.met is None else "met" if self.met else "NOT met"

    def __str__(self) -> str:
        return f"{self.name}: **{self.state}** ({self.figure})"


def measured(*values: float) -> bool:
    """Every value is a real number (a missing figure is NaN)."""
    return all(isinstance(v, int | float) and not math.isnan(v) for v in values)


@dataclass
class Section:
    """One benchmark's result: a markdown table plus verdict lines and notes."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    verdicts: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    correct: bool = True  # False when a guarantee (once, never early, ...) was broken
    figures: dict[str, float] = field(default_factory=dict)  # named numbers for the targets

    def markdown(self) -> str:
        """The section as markdown (title, table, verdicts, notes)."""
        lines = [f"## {self.title}", "", "| " + " | ".join(self.headers) + " |",
                 "|" + "|".join("---" for _ in self.headers) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.verdicts:
            lines += ["", *(f"- {v}" for v in self.verdicts)]
        if self.notes:
            lines += ["", *self.notes]
        return "\n".join(lines) + "\n"

    def print(self) -> None:
        """Print the section as an aligned text table."""
        widths = [max(len(str(c)) for c in col) for col in zip(self.headers, *self.rows,
                                                                  strict=True)]
        print(f"\n== {self.title}")
        for row in [self.headers, *self.rows]:
            print("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)))
        for verdict in self.verdicts:
            print(f"  * {verdict}")
        for note in self.notes:
            print(f"  {note}")
        sys.stdout.flush()


def rate(count: float, seconds: float) -> str:
    """A jobs/s figure, rounded for a table."""
    return f"{count / seconds:,.0f}" if seconds > 0 else "n/a"


def ms(value: float) -> str:
    """A millisecond figure for a table."""
    return f"{value:.2f}" if not math.isnan(value) else "n/a"


def verdict(name: str, met: bool | None, figure: str, key: str = "") -> Check:
    """A ``name: met/NOT met/not measured (figure)`` check; ``met`` None: no figure to judge."""
    return Check(name, met, figure, key)


def versions(client: redis.Redis) -> dict[str, str]:
    """Python, redis-py, Redis and streamdelay versions, and the machine."""
    info = client.info("server")
    return {
        "python": platform.python_version(),
        "redis-py": redis.__version__,
        "redis": str(info.get("redis_version")),
        "streamdelay": sd.__version__ if hasattr(sd, "__version__") else "0.1.0",
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, {platform.system()} "
                   f"{platform.release()}",
        "load": "load average {:.2f} {:.2f} {:.2f} at start".format(*os.getloadavg()),
    }


@contextlib.contextmanager
def redis_server(*extra: str) -> Iterator[RedisServer]:
    """A private redis-server (no persistence) for one benchmark."""
    server = RedisServer(*extra).start()
    try:
        yield server
    finally:
        server.stop()


def keys_of(queue: str) -> PartitionKeys:
    """The keys of partition 0 of ``queue``."""
    return PartitionKeys(queue, 0)


class Workers:
    """``n`` worker processes started through the real CLI on ``benchmarks.e2e.bench_app``."""

    def __init__(self, url: str, queue: str, n: int, *, mode: str = "record",
                 concurrency: int = 64, dispatch: bool = True) -> None:
        self.url, self.queue, self.n, self.dispatch = url, queue, n, dispatch
        self.logdir = Path(tempfile.mkdtemp(prefix="sd-bench-"))
        env = dict(os.environ, BENCH_QUEUE=queue, BENCH_MODE=mode,
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        args = [sys.executable, "-m", "streamdelay", "worker", "benchmarks.e2e.bench_app:worker",
                "--url", url, "--concurrency", str(concurrency), "--log-level", "warning"]
        if not dispatch:
            args.append("--no-dispatch")
        self.processes = [
            subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=(self.logdir / f"worker{i}.log").open("wb"))
            for i in range(n)
        ]

    def wait_ready(self, client: redis.Redis, timeout: float = 30.0) -> None:
        """Wait until every worker blocks in XREADGROUP (and, with dispatch, in BZPOPMIN)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            commands = [c.get("cmd") for c in client.client_list()]
            if commands.count("xreadgroup") >= self.n and (
                    not self.dispatch or commands.count("bzpopmin") >= self.n):
                return
            time.sleep(0.05)
        raise RuntimeError(f"workers did not start; logs in {self.logdir}")

    def check_alive(self) -> None:
        """Raise when a worker process has exited."""
        for i, proc in enumerate(self.processes):
            if proc.poll() is not None:
                log = (self.logdir / f"worker{i}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"worker {i} exited with {proc.returncode}:\n{log}")

    def stop(self) -> None:
        """SIGTERM every worker and wait for it (SIGKILL after 20 s)."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_drained(client: redis.Redis, jobs_key: str, due_at_ms: float, offset_ms: float,
                 workers: Workers, sparing: bool = False) -> tuple[float, float]:
    """(seconds from ``due_at_ms`` until the jobs hash ``jobs_key`` is empty, Redis CPU s over
    that time): the end of a drain of jobs due at one instant, on the server clock (the local
    clock plus ``offset_ms``, from ``measure_clock_offset``), polled every 2 ms.

    ``sparing``: the poll costs this process and Redis a share of a core (every 2 ms a round
    trip: 30-60 ms of CPU a second on the 2-core host), taken from the workers it measures. So
    it sleeps until the due instant, then between polls a quarter of the time the drain's pace
    says is left (2 ms at least, 50 ms at most): the end is still seen within 2 ms once it is
    near, and a drain of seconds costs tens of polls, not hundreds."""
    cpu_start = None
    first: tuple[float, int] | None = None  # (ms, jobs left) at the first poll after due
    while True:
        now_ms = time.time() * 1000 + offset_ms
        if sparing and now_ms < due_at_ms - 2:
            workers.check_alive()
            time.sleep(min(0.05, (due_at_ms - now_ms) / 1000 - 0.002))
            continue
        if cpu_start is None and now_ms >= due_at_ms:
            cpu_start = redis_cpu_seconds(client)
        left = client.hlen(jobs_key) if now_ms >= due_at_ms else -1
        if left == 0:
            break
        workers.check_alive()
        pause = 0.002
        if sparing and left > 0:
            if first is None:
                first = (now_ms, left)
            elif left < first[1]:  # the pace so far: ms per job
                pace = (now_ms - first[0]) / (first[1] - left)
                pause = min(0.05, max(0.002, left * pace / 4000))
        time.sleep(pause)
    return (now_ms - due_at_ms) / 1000, redis_cpu_seconds(client) - (cpu_start or 0.0)


def server_now_ms(client: redis.Redis) -> float:
    """The Redis server clock in epoch ms."""
    seconds, micros = client.time()
    return seconds * 1000.0 + micros / 1000.0


def redis_cpu_seconds(client: redis.Redis) -> float:
    """CPU seconds (user + sys) the Redis server has used."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def measure_clock_offset(client: redis.Redis, samples: int = 50) -> tuple[float, float]:
    """(server ms - local ms, error bound ms) from the ``TIME`` sample with the shortest RTT."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        sent = time.time()
        seconds, micros = client.time()
        received = time.time()
        rtt_ms = (received - sent) * 1000.0
        offset = seconds * 1000.0 + micros / 1000.0 - (sent + received) * 500.0
        if best is None or rtt_ms < best[1] * 2:
            best = (offset, rtt_ms / 2)
    assert best is not None
    return best


def script_times(client: redis.Redis) -> dict[str, list[int]]:
    """Durations (µs) of the calls in SLOWLOG, by script name (EVALSHA) or command name.

    Start the server with ``--slowlog-log-slower-than 0`` to see every call.
    """
    from streamdelay.protocol.scripts import load_scripts

    names = {s.sha: name for name, s in load_scripts().items()}
    found: dict[str, list[int]] = {}
    for entry in client.slowlog_get(1_000_000):
        words = entry["command"].split()
        name = words[0].decode().upper()
        if name == "EVALSHA" and len(words) > 1:
            name = names.get(words[1].decode(), "EVALSHA ?")
        found.setdefault(name, []).append(int(entry["duration"]))
    return found


SLOWLOG_ALL = ("--slowlog-log-slower-than", "0", "--slowlog-max-len", "1000000")
