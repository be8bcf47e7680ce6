"""The HTTP service (``streamdelay serve``): enqueue and reserve + ack over HTTP, next to the
library and the bare HTTP stack measured in the same run.

One real ``streamdelay serve`` process (one uvicorn worker, a bearer token configured, on
loopback) on a private redis-server; the load comes from ``benchmarks/web/http_load.py`` (raw
HTTP/1.1 over asyncio streams, keep-alive connections, one request in flight per connection).
On a 2-core machine the client, the server and Redis share the cores: the table gives each
one's CPU so the reader can see which one was the bound.

- HTTP enqueue, one job per request (``POST /v1/queues/{q}/jobs``), several connections;
- the batch route (``POST /v1/queues/{q}/jobs:batch``), 1,000 jobs per request;
- reserve + ack, one consumer in a loop (``:reserve`` with count 1, then ``:ack`` by receipt),
  with a backlog of ready jobs in the stream and the delayed jobs of the first two steps;
- ceilings of the same run: the bare HTTP stack (a no-op ASGI app under the same uvicorn) and
  the library without HTTP (``AsyncQueue.enqueue`` from concurrent callers, ``enqueue_many``).

``--profile DIR`` samples the server with py-spy during an extra enqueue run (not a measured
one) and prints where its time goes, by package.
Run: ``.venv/bin/python benchmarks/web/http_bench.py [--single 3000 --batches 40 --backlog 10000
--pairs 2000 --connections 8] [--profile DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core.harness import (
    LISTED_TARGET,
    ROOT,
    Section,
    percentile,
    redis_cpu_seconds,
    redis_server,
    verdict,
)
from benchmarks.micro import enqueue as library
from benchmarks.web.http_load import (
    BodyOf,
    Connection,
    LoadResult,
    close_all,
    drive,
    open_all,
    run_async,
    stack,
)
from benchmarks.web.http_profile import summary
from tests.support.redis_server import free_port

QUEUE = "web"
TOPIC = "bench.job"
READY_TOPIC = "bench.ready"
BATCH = 1000
SINGLE_MIN, BATCH_MIN, PAIR_P99_MAX_MS = 5_000, 50_000, 5.0
JOB = b'{"topic":"bench.job","id":"%s","delay":3600,"body":{"order_id":42,"pad":"%s"}}'
PAD = b"x" * 80  # ~100 B of JSON body, as in the library's enqueue benchmark


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(reply.status < 500)
    except OSError:
        return False


@contextlib.contextmanager
def process(args: list[str], ready_url: str, env: dict[str, str] | None = None,
            ) -> Iterator[subprocess.Popen[bytes]]:
    """A server child process, started and answering ``ready_url``; SIGTERM at the end."""
    with tempfile.TemporaryFile() as log:
        child = subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        yield from _supervised(child, args, ready_url, log)


def _supervised(child: subprocess.Popen[bytes], args: list[str], ready_url: str,
                log: IO[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        deadline = time.monotonic() + 30
        while not _answers(ready_url):
            if child.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"{' '.join(args[:4])} did not start: "
                                   f"{log.read()[-1500:].decode(errors='replace')}")
            time.sleep(0.1)
        yield child
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def serve(redis_url: str, port: int, token: str) -> contextlib.AbstractContextManager[
        subprocess.Popen[bytes]]:
    """``streamdelay serve`` for the benchmark queue, with one admin token."""
    env = {**os.environ, "STREAMDELAY_TOKENS": f"bench:{token}:read,write,consume,admin"}
    return process([sys.executable, "-m", "streamdelay", "serve", "--url", redis_url,
                    "--queue", QUEUE, "--host", "127.0.0.1", "--port", str(port)],
                   f"http://127.0.0.1:{port}/healthz", env)


def bare_stack(port: int) -> contextlib.AbstractContextManager[subprocess.Popen[bytes]]:
    """The no-op ASGI app of ``http_load`` under uvicorn, as ``serve`` runs it."""
    return process([sys.executable, "-m", "uvicorn", "benchmarks.web.http_load:raw_app",
                    "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
                    "--log-level", "warning"], f"http://127.0.0.1:{port}/")


def single_body(prefix: str) -> BodyOf:
    """Request bodies of the one-job route: a new id each."""
    return lambda i: JOB % (f"{prefix}{i}".encode(), PAD)


def batch_body(prefix: str) -> BodyOf:
    """Request bodies of the batch route: ``BATCH`` jobs with new ids each."""
    def body(i: int) -> bytes:
        jobs = b",".join(JOB % (f"{prefix}{i}-{j}".encode(), PAD) for j in range(BATCH))
        return b'{"jobs":[%s]}' % jobs
    return body


async def load(port: int, token: str, connections: int, requests: int, path: str,
               body_of: BodyOf, pid: int, client: redis.Redis | None,
               ) -> tuple[LoadResult, float, float]:
    """One closed-loop run: (result, server CPU s, Redis CPU s)."""
    conns = await open_all("127.0.0.1", port, connections, token)
    try:
        await drive(conns, min(requests, connections * 20), "POST", path,
                    lambda i: body_of(-1 - i))  # warm-up, ids of its own
        server_cpu = cpu_seconds(pid)
        redis_cpu = redis_cpu_seconds(client) if client else 0.0
        result = await drive(conns, requests, "POST", path, body_of)
        server_cpu = cpu_seconds(pid) - server_cpu
        redis_cpu = redis_cpu_seconds(client) - redis_cpu if client else 0.0
    finally:
        await close_all(conns)
    return result, server_cpu, redis_cpu


async def reserve_ack(port: int, token: str, pairs: int) -> tuple[list[float], list[float],
                                                                   list[float], float]:
    """One consumer: reserve one delivery, ack it, ``pairs`` times: latencies (ms) of reserve,
    ack and the pair, and the wall seconds of the whole loop."""
    conn = await Connection.open("127.0.0.1", port, token)
    reserve = f"/v1/queues/{QUEUE}/topics/{READY_TOPIC}:reserve"
    ask = json.dumps({"group": "bench", "consumer": "c1", "wait_ms": 1000, "count": 1}).encode()
    reserves, acks, both = [], [], []
    try:
        began = time.perf_counter()
        for _ in range(pairs):
            t0 = time.perf_counter()
            status, answer = await conn.request("POST", reserve, ask)
            t1 = time.perf_counter()
            if status != 200:
                raise RuntimeError(f"reserve: HTTP {status} {answer[:300]!r}")
            receipt = json.loads(answer)["deliveries"][0]["receipt"]
            status, answer = await conn.request(
                "POST", f"/v1/queues/{QUEUE}/deliveries/{urllib.parse.quote(receipt, safe='')}"
                ":ack", b"{}")
            t2 = time.perf_counter()
            if status >= 300:
                raise RuntimeError(f"ack: HTTP {status} {answer[:300]!r}")
            reserves.append((t1 - t0) * 1000)
            acks.append((t2 - t1) * 1000)
            both.append((t2 - t0) * 1000)
        wall = time.perf_counter() - began
    finally:
        await conn.close()
    return reserves, acks, both, wall


def _fill_backlog(queue: sd.Queue, jobs: int) -> None:
    """``jobs`` jobs due now on READY_TOPIC; returns once the server's dispatcher moved them all
    into the stream."""
    for start in range(0, jobs, BATCH):
        queue.enqueue_many([sd.JobSpec(READY_TOPIC, {"n": i}, id=f"r{i}")
                            for i in range(start, min(jobs, start + BATCH))])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        topic = queue.stats().topics.get(READY_TOPIC)
        if topic is not None and topic.delayed == 0:
            return
        time.sleep(0.1)
    raise RuntimeError("the server did not dispatch the backlog within 120 s")


def _row(what: str, result: LoadResult, jobs: int, server_cpu: float, redis_cpu: float,
         connections: int) -> list[str]:
    lat = result.latencies_ms
    return [what, str(connections), f"{result.requests:,}", f"{jobs / result.seconds:,.0f}",
            f"{percentile(lat, 50):.2f}", f"{percentile(lat, 99):.2f}",
            f"{server_cpu * 1e6 / jobs:,.1f}", f"{server_cpu / result.seconds:.2f}",
            f"{result.client_share:.2f}",
            f"{redis_cpu / result.seconds:.2f}" if redis_cpu else "-"]


def _library_row(what: str, jobs: int, seconds: float) -> list[str]:
    return [what, "-", f"{jobs:,}", f"{jobs / seconds:,.0f}", *["-"] * 6]


def run(single: int = 3000, batches: int = 40, backlog: int = 10_000, pairs: int = 2000,
        connections: int = 8, profile: str | None = None) -> Section:
    """Every step on one private Redis and one server; returns the section."""
    token = secrets.token_urlsafe(24)
    rows: list[list[str]] = []
    f: dict[str, float] = {}
    port = free_port()
    with bare_stack(port) as child:
        result, cpu, _ = run_async(load(port, "", connections, single, "/",
                                        single_body("b"), child.pid, None))
    rows.append(_row("bare uvicorn, no-op ASGI app (ceiling)", result, single, cpu, 0.0,
                     connections))
    f.update(http_bare=result.per_second, http_bare_cpu_us=cpu * 1e6 / single)
    with redis_server() as server:
        client = server.client()
        port = free_port()
        with serve(server.url, port, token) as child:
            jobs_path = f"/v1/queues/{QUEUE}/jobs"
            result, cpu, rcpu = run_async(load(port, token, connections, single, jobs_path,
                                               single_body("s"), child.pid, client))
            rows.append(_row("HTTP enqueue, 1 job per request", result, single, cpu, rcpu,
                             connections))
            f.update(http_enqueue_single=result.per_second,
                     http_single_cpu_us=cpu * 1e6 / single,
                     http_client_share=result.client_share,
                     http_server_share=cpu / result.seconds)
            # each ceiling right after its HTTP step, so both see the same machine load
            lib_async = asyncio.run(library._sd_async(server.url, 100, single))
            result, cpu, rcpu = run_async(load(port, token, 2, batches, f"{jobs_path}:batch",
                                               batch_body("m"), child.pid, client))
            rows.append(_row(f"HTTP enqueue, batch route ({BATCH:,} per request)", result,
                             batches * BATCH, cpu, rcpu, 2))
            f.update(http_enqueue_batch=batches * BATCH / result.seconds,
                     http_batch_cpu_us=cpu * 1e6 / (batches * BATCH))
            with sd.Queue("lib", url=server.url) as lib:
                lib_many = library._sd_many(lib, 0, batches * BATCH)
            queue = sd.Queue(QUEUE, url=server.url)
            _fill_backlog(queue, backlog + pairs + 100)
            cpu = cpu_seconds(child.pid)
            reserves, acks, both, wall = run_async(reserve_ack(port, token, pairs))
            cpu = cpu_seconds(child.pid) - cpu
            rows.append(["reserve + ack (1 consumer, count 1)", "1", f"{pairs:,} pairs",
                         f"{pairs / wall:,.0f}", f"{percentile(both, 50):.2f}",
                         f"{percentile(both, 99):.2f}", f"{cpu * 1e6 / pairs:,.1f}",
                         f"{cpu / wall:.2f}", "-", "-"])
            f.update(http_pair_p99_ms=percentile(both, 99),
                     http_pair_p50_ms=percentile(both, 50),
                     http_reserve_p99_ms=percentile(reserves, 99),
                     http_ack_p99_ms=percentile(acks, 99))
            if profile:
                profile_server(child.pid, port, token, connections, single, Path(profile))
            queue.close()
        client.close()
    rows.append(_library_row("library `AsyncQueue.enqueue`, 100 callers, no HTTP (ceiling)",
                             single, lib_async))
    rows.append(_library_row(f"library `enqueue_many` x{BATCH:,}, no HTTP (ceiling)",
                             batches * BATCH, lib_many))
    f.update(http_lib_async=single / lib_async, http_lib_many=batches * BATCH / lib_many)
    return section(rows, f, backlog)


def section(rows: list[list[str]], f: dict[str, float], backlog: int) -> Section:
    """The table, the three targets judged and the notes that say what bounds them."""
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    per_core = 1e6 / f["http_single_cpu_us"] if f["http_single_cpu_us"] else math.nan
    verdicts = [
        verdict(f"HTTP enqueue one job per request (keep-alive) >= {SINGLE_MIN / 1000:g}k "
                "jobs/s from one server process", f["http_enqueue_single"] >= SINGLE_MIN,
                f"{f['http_enqueue_single']:,.0f}/s with the server at "
                f"{f['http_server_share']:.2f} core and the client at "
                f"{f['http_client_share']:.2f}; {f['http_single_cpu_us']:.0f} µs of server "
                f"CPU per request, i.e. ~{per_core:,.0f}/s for a whole core; bare HTTP stack "
                f"{f['http_bare']:,.0f}/s, library async {f['http_lib_async']:,.0f}/s",
                f"{LISTED_TARGET}http_single"),
        verdict(f"HTTP batch route >= {BATCH_MIN / 1000:g}k jobs/s",
                f["http_enqueue_batch"] >= BATCH_MIN,
                f"{f['http_enqueue_batch']:,.0f}/s, {f['http_batch_cpu_us']:.1f} µs of server "
                f"CPU per job; library `enqueue_many` {f['http_lib_many']:,.0f}/s",
                f"{LISTED_TARGET}http_batch"),
        verdict(f"HTTP reserve + ack p99 <= {PAIR_P99_MAX_MS:g} ms on loopback with a backlog",
                f["http_pair_p99_ms"] <= PAIR_P99_MAX_MS,
                f"p99 {f['http_pair_p99_ms']:.2f} ms (reserve {f['http_reserve_p99_ms']:.2f}, "
                f"ack {f['http_ack_p99_ms']:.2f}), p50 {f['http_pair_p50_ms']:.2f} ms",
                f"{LISTED_TARGET}http_pair_p99"),
    ]
    return Section(
        "HTTP service (`streamdelay serve`)",
        ["what", "connections", "requests", "jobs/s", "p50 ms", "p99 ms",
         "server CPU µs per job", "server CPU (cores)", "client CPU (cores)",
         "Redis CPU (cores)"], rows, verdicts=verdicts,
        notes=[f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load} at the end, "
               f"{os.cpu_count()} cores shared by the client, the server and Redis (and, on a "
               f"shared machine, other people's processes). One server process (uvicorn on "
               f"{stack()}); the client is raw HTTP/1.1 over asyncio streams (keep-alive, one "
               "request in flight per connection). A server near 1.00 core is the bound; "
               "below that, the machine's other load took the rest (the client's share is in "
               "its column). Server CPU per job does not depend on that load as much as jobs/s "
               f"does: 1,000,000 / it is what one whole core could do. Reserve + ack ran with "
               f"{backlog:,} ready jobs in the stream and the jobs of the enqueue steps in the "
               "delayed set; each library ceiling ran right after the HTTP step it bounds. "
               "Where the server's time goes (py-spy, `--profile DIR`): History, "
               "below."],
        figures=f)


def profile_server(pid: int, port: int, token: str, connections: int, requests: int,
                   out: Path) -> None:
    """Sample the server with py-spy during an extra enqueue run; print self time by package."""
    out.mkdir(parents=True, exist_ok=True)
    raw = out / "serve-enqueue.txt"
    spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record", "--pid",
                            str(pid), "--format", "raw", "--rate", "250", "--gil", "-o", str(raw)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    run_async(load(port, token, connections, requests * 2, f"/v1/queues/{QUEUE}/jobs",
                     single_body("p"), pid, None))
    spy.send_signal(signal.SIGINT)
    spy.wait(30)
    print(f"\nwhere the server's time goes (py-spy, samples holding the GIL, {raw}):")
    print(summary(raw.read_text()))


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", type=int, default=3000)
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--profile", default=None, help="a directory for py-spy's samples")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    result = run(args.single, args.batches, args.backlog, args.pairs, args.connections,
                 args.profile)
    print(result.markdown() if args.markdown else "", end="")
    if not args.markdown:
        result.print()


if __name__ == "__main__":
    main()
