"""1,000 concurrent long polls on one ``streamdelay serve`` process (docs/http.md#capacity).

One real ``streamdelay serve`` (default limits: ``--max-polls 1000``) on a private
redis-server; 1,000 HTTP consumers, each on its own keep-alive connection, loop on
``:reserve`` (count 1, ``wait_ms`` 10,000) and ack what they get. While all of them wait, jobs
due now are enqueued straight into Redis (the library, no HTTP): first a burst of 1,000 at once
(one per waiting poll), then a steady 200 jobs/s for 5 s (each consumer gets a job every
~5 s). For every job the consumer records,
on the machine's clock (the same as the Redis server's here): due → reserve answered (its
delivery lateness), reserve answered → ack answered, and due → ack answered (the whole
reserve-to-ack cycle). The server's resident memory is read from ``/proc`` idle, with the
1,000 polls waiting, and at its peak; no poll may be refused (429/503), no job lost or
delivered twice.

Run: ``.venv/bin/python benchmarks/web/http_polls.py [--polls 1000 --rate 200 --seconds 5]
[--markdown]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import Section, percentile, redis_server, verdict
from benchmarks.web.http_bench import cpu_seconds, process
from benchmarks.web.http_load import Connection, run_async, stack
from tests.support.redis_server import free_port

QUEUE = "polls"
TOPIC = "bench.poll"
WAIT_MS = 10_000
IDLE_S = 3.0


@dataclass
class Tally:
    """What the consumers saw, per phase."""

    phase: str = "burst"
    late_ms: dict[str, list[float]] = field(default_factory=dict)
    ack_ms: dict[str, list[float]] = field(default_factory=dict)
    cycle_ms: dict[str, list[float]] = field(default_factory=dict)
    taken: Counter[str] = field(default_factory=Counter)
    refused: Counter[int] = field(default_factory=Counter)
    acked: int = 0
    waiting: int = 0

    def add(self, job_id: str, late: float, ack: float, cycle: float) -> None:
        """One job taken and acked."""
        for store, value in ((self.late_ms, late), (self.ack_ms, ack),
                             (self.cycle_ms, cycle)):
            store.setdefault(self.phase, []).append(value)
        self.taken[job_id] += 1
        self.acked += 1


def rss_mib(pid: int, field_name: str = "VmRSS") -> float:
    """Resident memory of a process (``/proc/PID/status``), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def consumer(number: int, port: int, token: str, tally: Tally,
                   stop: asyncio.Event) -> None:
    """Reserve one job at a time with a long poll, ack it, until ``stop``."""
    conn = await Connection.open("127.0.0.1", port, token)
    reserve = f"/v1/queues/{QUEUE}/topics/{TOPIC}:reserve"
    ask = json.dumps({"group": "bench", "consumer": f"c{number}", "wait_ms": WAIT_MS,
                      "count": 1}).encode()
    try:
        while not stop.is_set():
            tally.waiting += 1
            try:
                status, answer = await conn.request("POST", reserve, ask)
            finally:
                tally.waiting -= 1
            reserved = time.time() * 1000
            if status == 204:
                continue
            if status != 200:
                tally.refused[status] += 1
                await asyncio.sleep(1.0)
                continue
            delivery = json.loads(answer)["deliveries"][0]
            receipt = urllib.parse.quote(delivery["receipt"], safe="")
            status, answer = await conn.request(
                "POST", f"/v1/queues/{QUEUE}/deliveries/{receipt}:ack", b"{}")
            acked = time.time() * 1000
            if status != 200:
                raise RuntimeError(f"ack: HTTP {status} {answer[:300]!r}")
            tally.add(delivery["id"], reserved - delivery["due"], acked - reserved,
                      acked - delivery["due"])
    finally:
        await conn.close()


async def _until(check: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def scenario(url: str, port: int, token: str, pid: int, polls: int, rate: int,
                   seconds: float) -> tuple[Tally, dict[str, float], int]:
    """The burst then the steady phase; (tally, figures, jobs enqueued)."""
    tally, stop, f = Tally(), asyncio.Event(), {"rss_idle": rss_mib(pid)}
    tasks = [asyncio.ensure_future(consumer(n, port, token, tally, stop))
             for n in range(polls)]
    queue = sd.AsyncQueue(QUEUE, url=url)
    try:
        if not await _until(lambda: tally.waiting >= polls, 60):
            raise RuntimeError(f"only {tally.waiting} of {polls} polls started")
        await asyncio.sleep(1.0)  # every poll is blocked in Redis
        cpu, began = cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(IDLE_S)  # what waiting costs: the polls' 1 s slices, no job
        f["idle_cpu"] = (cpu_seconds(pid) - cpu) / (time.monotonic() - began)
        f["rss_waiting"] = rss_mib(pid)
        f["redis_clients"] = float((await queue.client.info("clients"))["connected_clients"])
        cpu = cpu_seconds(pid)
        began = time.monotonic()
        await queue.enqueue_many([sd.JobSpec(TOPIC, {"n": i}, id=f"b{i}")
                                  for i in range(polls)])
        if not await _until(lambda: tally.acked >= polls, 60):
            raise RuntimeError(f"the burst: {tally.acked} of {polls} acked in 60 s")
        f["burst_s"], f["burst_cpu"] = time.monotonic() - began, cpu_seconds(pid) - cpu
        tally.phase = "steady"
        await asyncio.sleep(0.5)
        cpu, began, sent, step = cpu_seconds(pid), time.monotonic(), 0, 0.05
        total = int(rate * seconds)
        while sent < total:
            batch = min(total - sent, max(1, round(rate * step)))
            await queue.enqueue_many([sd.JobSpec(TOPIC, {"n": i}, id=f"s{i}")
                                      for i in range(sent, sent + batch)])
            sent += batch
            await asyncio.sleep(max(0.0, began + sent / rate - time.monotonic()))
        if not await _until(lambda: tally.acked >= polls + total, 60):
            raise RuntimeError(f"the steady phase: {tally.acked - polls} of {total} acked")
        f["steady_s"], f["steady_cpu"] = time.monotonic() - began, cpu_seconds(pid) - cpu
        f["rss_peak"] = rss_mib(pid, "VmHWM")
    finally:
        stop.set()
        for task in tasks:  # the waiting polls hang up: the server must shrug that off
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await queue.close()
    return tally, f, polls + total


def run(polls: int = 1000, rate: int = 200, seconds: float = 5.0) -> Section:
    """The scenario on a private Redis and one server; returns the section."""
    token = secrets.token_urlsafe(24)
    with redis_server() as server:
        port = free_port()
        env = {**os.environ, "STREAMDELAY_TOKENS": f"bench:{token}:read,write,consume,admin"}
        with process([sys.executable, "-m", "streamdelay", "serve", "--url", server.url,
                      "--queue", QUEUE, "--host", "127.0.0.1", "--port", str(port)],
                     f"http://127.0.0.1:{port}/healthz", env) as child:
            tally, f, jobs = run_async(scenario(server.url, port, token, child.pid, polls,
                                                rate, seconds))
    return section(tally, f, jobs, polls, rate, seconds)


def _ms(values: list[float]) -> str:
    return f"{percentile(values, 50):.1f} / {percentile(values, 99):.1f}"


def section(tally: Tally, f: dict[str, float], jobs: int, polls: int, rate: int,
            seconds: float) -> Section:
    """The table, the checks and the notes."""
    twice = sum(1 for count in tally.taken.values() if count > 1)
    lost = jobs - len(tally.taken)
    rows = []
    for phase, what, wall, cpu in (
            ("burst", f"burst: {polls:,} jobs at once", f["burst_s"], f["burst_cpu"]),
            ("steady", f"steady: {rate:,} jobs/s for {seconds:g} s", f["steady_s"],
             f["steady_cpu"])):
        rows.append([what, f"{len(tally.cycle_ms[phase]):,}", _ms(tally.late_ms[phase]),
                     _ms(tally.ack_ms[phase]), _ms(tally.cycle_ms[phase]),
                     f"{cpu / wall:.2f}"])
    cycle_p99 = percentile(tally.cycle_ms["steady"], 99)
    verdicts = [
        verdict(f"{polls:,} concurrent long polls on one server process: none refused "
                "(429/503), every job delivered once", not tally.refused and not twice
                and not lost, f"refused {dict(tally.refused) or 0}, lost {lost}, delivered "
                f"twice {twice}; reserve-to-ack p99 {cycle_p99:.1f} ms at {rate:,} jobs/s; "
                f"server RSS {f['rss_waiting']:.0f} MiB with the polls waiting",
                "http_polls"),
    ]
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    return Section(
        f"HTTP long polls: {polls:,} consumers waiting on one `streamdelay serve` process",
        ["phase", "jobs", "due → delivered ms (p50 / p99)",
         "reserve answered → ack answered ms (p50 / p99)",
         "due → acked ms (p50 / p99)", "server CPU (cores)"], rows, verdicts=verdicts,
        correct=not twice and not lost,
        notes=[f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load} at the end, "
               f"{os.cpu_count()} cores shared by the {polls:,} clients (one asyncio process), the "
               f"server and Redis. One server process (uvicorn on {stack()}), default limits "
               f"(`--max-polls 1000`: its queue's reserve pool holds 1,000 Redis connections). "
               f"Server resident memory: {f['rss_idle']:.0f} MiB idle, {f['rss_waiting']:.0f} "
               f"MiB with the {polls:,} polls waiting (Redis counted "
               f"{f['redis_clients']:.0f} clients), {f['rss_peak']:.0f} MiB at its peak. "
               f"Waiting alone, no job, took {f['idle_cpu']:.2f} core of the server: a long poll "
               "waits in 1 s slices (so a stopping service answers within one), each a "
               "`:reserve` round of its own. "
               "Each consumer waits with `wait_ms` 10,000 and count 1; jobs due now are "
               "enqueued with the library straight into Redis, so the server only answers "
               "polls and acks. Times on the machine's clock, which is the Redis server's."],
        figures={"http_polls_cycle_p99_ms": cycle_p99, "http_polls_rss_mib": f["rss_waiting"]})


def main() -> None:
    """Run and print the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true", help="print the report's section")
    args = parser.parse_args()
    result = run(args.polls, args.rate, args.seconds)
    result.print()
    if args.markdown:
        print("\n" + result.markdown())


if __name__ == "__main__":
    main()
