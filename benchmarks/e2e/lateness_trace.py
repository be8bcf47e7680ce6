"""Where a job's lateness goes: per-job timestamps through one worker process.

With ``BENCH_TRACE=<dir>`` the bench worker (``benchmarks/e2e/bench_app.py``) installs the hooks of
``install()``: every ``promoteDue`` call (local send and reply time, the server clock the script
read, jobs moved), every dispatcher wait (asked, slept), every batch of stream entries the read
loop starts (local time, batch size, entry ids) and every garbage-collector pause; it writes them
to ``<dir>/<pid>.json`` at exit. ``run()`` drives ``lateness_rates.at_rate`` with the hooks on and
splits each job's lateness (handler start - due, server clock) into

- ``wake``: promote call sent - due (the dispatcher's sleep and wake-up; negative when a call
  sent before the job's due time reached the server after it: the script moves only jobs due
  by ``TIME``);
- ``to_redis``: the server clock the script read - call sent (half a round trip, plus the
  queueing of the request);
- ``read``: the read loop got the entry - the script's clock (the ``XREADGROUP`` wake-up, the
  reply's way back, the event loop getting to it);
- ``start``: handler start - entry read (task creation and scheduling, decoding);
- ``runq``: how long the worker's main thread was runnable but not running (kernel
  ``schedstat``) between the promote call before the job's and the job's own: the CPU other
  processes took from it; ``oncpu``: how long it ran in that interval (a long callback of its
  own event loop shows here).

Run: ``.venv/bin/python benchmarks/e2e/lateness_trace.py [--rates 200 2000]``.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import os
import sys
import tempfile
import time
from bisect import bisect_right
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def install(out_dir: str) -> None:
    """Hook the dispatcher, the read loop and the collector of this process (bench worker)."""
    from streamdelay.consume.worker import Worker
    from streamdelay.dispatch.dispatcher import Dispatcher
    from streamdelay.io.precise_wait import PreciseWait

    promotes: list[tuple[float, float, int, int]] = []
    waits: list[tuple[float, float, float]] = []
    reads: list[tuple[float, list[str]]] = []
    pauses: list[tuple[float, float, int]] = []
    promote_once, wait, start_entries = (Dispatcher.promote_once, PreciseWait.wait,
                                         Worker.start_entries)

    schedstat = open(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat", "rb")  # noqa: SIM115

    def run_queue_wait() -> tuple[float, float]:
        """ms this thread has spent running and runnable but not running (kernel schedstat)."""
        schedstat.seek(0)
        ran, waited = schedstat.read().split()[:2]
        return int(ran) / 1e6, int(waited) / 1e6

    async def traced_promote(self: Any, keys: Any) -> Any:
        sent = time.time()
        ran, queued = run_queue_wait()
        result = await promote_once(self, keys)
        promotes.append((sent, time.time(), result.now_us, result.moved, queued, ran))
        return result

    async def traced_wait(self: Any, wake: Any, gap: float) -> None:
        began = time.time()
        await wait(self, wake, gap)
        waits.append((began, gap, time.time() - began))

    def traced_start(self: Any, entries: Any) -> int:
        got = time.time()
        entries = list(entries)  # consume.core.taking.Entry: (partition, topic, entry_id, fields)
        reads.append((got, [entry.entry_id for entry in entries]))
        return start_entries(self, entries)

    started: list[float] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.time()]
        elif started:
            pauses.append((started[0], time.time(), info["generation"]))

    def dump() -> None:
        Path(out_dir, f"{os.getpid()}.json").write_text(json.dumps({
            "promotes": promotes, "waits": waits, "reads": reads, "gc": pauses}))

    Dispatcher.promote_once = traced_promote  # type: ignore[method-assign]
    PreciseWait.wait = traced_wait  # type: ignore[method-assign]
    Worker.start_entries = traced_start  # type: ignore[method-assign]
    gc.callbacks.append(on_gc)
    atexit.register(dump)


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q / 100))]


def split(records: list[dict[str, Any]], trace: dict[str, Any],
          offset_ms: float) -> list[dict[str, float]]:
    """Each job's lateness and its parts (ms), from the bench records and one process' trace."""
    promotes = sorted((p for p in trace["promotes"] if p[3] > 0), key=lambda p: p[2])
    server_at = [p[2] / 1000 for p in promotes]
    read_at = {eid: got * 1000 + offset_ms for got, ids in trace["reads"] for eid in ids}
    batch = {eid: len(ids) for _, ids in trace["reads"] for eid in ids}
    rows = []
    for r in records:
        entry_ms = int(r["entry"].split("-")[0])
        # the promote that wrote the entry: its script clock falls in the entry id's millisecond
        i = bisect_right(server_at, entry_ms + 1) - 1
        while i > 0 and int(server_at[i]) > entry_ms:
            i -= 1
        got = read_at.get(r["entry"])
        if i < 0 or int(server_at[i]) != entry_ms or got is None:
            continue
        sent, _, now_us, _, queued, ran = promotes[i]
        queued_before, ran_before = (promotes[i - 1][4], promotes[i - 1][5]) if i > 0 \
            else (queued, ran)
        rows.append({"late": r["start"] - r["due"],
                     "wake": sent * 1000 + offset_ms - r["due"],
                     "to_redis": now_us / 1000 - (sent * 1000 + offset_ms),
                     "read": got - now_us / 1000,
                     "start": r["start"] - got,
                     "batch": batch[r["entry"]],
                     "runq": queued - queued_before,
                     "oncpu": ran - ran_before,
                     "due": r["due"]})
    return rows


def report(rows: list[dict[str, float]], gc_pauses: list[Any], offset_ms: float,
           label: str) -> None:
    """Print the parts at p50 / p99 / max, and what the slowest 1 % of jobs are made of."""
    print(f"\n{label}: {len(rows)} jobs traced")
    for part in ("late", "wake", "to_redis", "read", "start"):
        values = [r[part] for r in rows]
        print(f"  {part:9s} p50 {pct(values, 50):7.3f}  p99 {pct(values, 99):7.3f}  "
              f"max {max(values):7.3f} ms")
    tail = sorted(rows, key=lambda r: r["late"])[-max(1, len(rows) // 100):]
    print("  slowest 1 %: mean of each part (ms):",
          {p: round(sum(r[p] for r in tail) / len(tail), 3)
           for p in ("late", "wake", "to_redis", "read", "start", "batch", "runq", "oncpu")})
    first = min(r["due"] for r in rows)
    for r in sorted(rows, key=lambda r: r["late"])[-8:]:
        print(f"    due +{r['due'] - first:6.0f} ms: " + " ".join(
            f"{p} {r[p]:.3f}" for p in ("late", "wake", "to_redis", "read", "start", "runq",
                                         "oncpu")))
    spans = [(s * 1000 + offset_ms, e * 1000 + offset_ms) for s, e, _ in gc_pauses]
    hit = sum(1 for r in tail if any(s - 3 <= r["due"] + r["late"] and e >= r["due"]
                                     for s, e in spans))
    longest = max(((e - s) * 1000 for s, e, _ in gc_pauses), default=0.0)
    print(f"  GC pauses: {len(gc_pauses)}, max {longest:.2f} ms; slowest 1 % overlapping one: "
          f"{hit}/{len(tail)}")
    for gen in range(3):
        took = [(e - s) * 1000 for s, e, g in gc_pauses if g == gen]
        if took:
            print(f"    generation {gen}: {len(took)}, p50 {pct(took, 50):.3f} max "
                  f"{max(took):.3f} ms")


def report_waits(waits: list[Any]) -> None:
    """How much later than asked the dispatcher's timed waits ended (those not cut short)."""
    over = [(slept - gap) * 1000 for _, gap, slept in waits if slept >= gap]
    short = sum(1 for _, gap, slept in waits if slept < gap)
    for lo, hi in ((0.0, 0.001), (0.001, 0.002), (0.002, 0.01), (0.01, 10.0)):
        sel = [(slept - gap) * 1000 for _, gap, slept in waits if lo <= gap < hi and slept >= gap]
        if sel:
            print(f"  waits of {lo * 1000:g}-{hi * 1000:g} ms: {len(sel)}, overshoot p50 "
                  f"{pct(sel, 50):.3f} p99 {pct(sel, 99):.3f} max {max(sel):.3f} ms")
    print(f"  waits: {len(waits)} ({short} cut short), overshoot p50 {pct(over, 50):.3f} p99 "
          f"{pct(over, 99):.3f} max {max(over, default=0):.3f} ms")


def run(rates: tuple[int, ...]) -> None:
    """The rate benchmark with the trace hooks on, one worker process; prints the split."""
    from benchmarks.core.harness import redis_server
    from benchmarks.e2e.lateness_rates import DURATION, at_rate

    out = tempfile.mkdtemp(prefix="sd-trace-")
    os.environ["BENCH_TRACE"] = out
    with redis_server() as server:
        client = server.client()
        for per_second in rates:
            for old in Path(out).glob("*.json"):
                old.unlink()
            at_rate(server.url, client, per_second, DURATION.get(per_second, 5.0), 1)
            records = [dict(zip(("id", "start", "due", "entry", "attempt", "pid"),
                                raw.decode().split("|"), strict=True))
                       for raw in client.lrange(f"bench:records:rate{per_second}", 0, -1)]
            for rec in records:
                rec["start"], rec["due"] = float(rec["start"]), int(rec["due"])
            offsets = {k.decode().rsplit(":", 1)[1]: float(client.get(k).decode().split("|")[0])
                       for k in client.scan_iter("bench:offset:*")}
            for path in Path(out).glob("*.json"):
                trace = json.loads(path.read_text())
                offset = offsets[path.stem]
                mine = [r for r in records if r["pid"] == path.stem]
                report(split(mine, trace, offset), trace["gc"], offset,
                       f"{per_second:,} due/s (pid {path.stem})")
                report_waits(trace["waits"])
                empty = sum(1 for p in trace["promotes"] if p[3] == 0)
                print(f"  promote calls: {len(trace['promotes'])}, {empty} moved nothing")


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[200, 2000])
    run(tuple(parser.parse_args().rates))


if __name__ == "__main__":
    main()
