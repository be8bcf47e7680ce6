"""A job's whole life on the Redis server against the same jobs through plain commands.

Life: N jobs (default 20,000) enqueued with ``enqueue_many`` in lists of 100, all due at one
instant a little later, promoted by the embedded dispatcher of one ``streamdelay worker`` process
(``benchmarks.e2e.bench_app``, async no-op handler), read and acknowledged by it. The figure is
the Redis time of every call the queue's clients made over the run (the producer's and the
worker's, idle polls and bookkeeping included) divided by N. The calls come from ``SLOWLOG``
(every call logged; the harness's own polls left out by their client name): ``INFO
commandstats`` counts a script's inner commands both on their own line and inside the
``EVALSHA``, so its sum would count them twice; its lines give the inner commands' share.

Raw floor, same server, same run: the same N jobs through plain commands batched the same way:
``HSET`` + ``ZADD`` of 100 jobs; ``ZRANGEBYSCORE`` + ``ZREM`` of 200 due ids and an ``XADD`` of
each (the promote's batch); ``XREADGROUP COUNT 64`` (the worker's read) then ``XACK`` + ``XDEL`` +
``HDEL`` of what it read. Its time is the ``commandstats`` sum (no script). Target (issue 39):
life <= 2.5x the floor (stretch 2x).

Run: ``.venv/bin/python benchmarks/e2e/life.py [--jobs 20000] [--events]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core import raw_floor
from benchmarks.core.harness import (
    LISTED_TARGET,
    SLOWLOG_ALL,
    Section,
    Workers,
    keys_of,
    measure_clock_offset,
    redis_server,
    server_now_ms,
    verdict,
    wait_drained,
)
from streamdelay.protocol.scripts import load_scripts

BODY = {"order_id": 42, "pad": "x" * 80}  # ~100 bytes of JSON
# the scripts batch as the raw floor does
ENQUEUE_BATCH, PROMOTE_BATCH, READ_COUNT = (raw_floor.ENQUEUE_BATCH, raw_floor.PROMOTE_BATCH,
                                            raw_floor.READ_COUNT)
TARGET, STRETCH = 2.5, 2.0
HARNESS = "life-harness"  # the client name whose calls are not the queue's
# which step of a life each call belongs to (the rest: bookkeeping of the worker)
STEPS = {"enqueueJobs": "enqueue", "promoteDue": "promote", "XREADGROUP": "read",
         "ackJobs": "ack"}


def commandstats(client: redis.Redis) -> dict[str, tuple[int, int]]:
    """``{command: (calls, usec)}`` of ``INFO commandstats``."""
    return {name.removeprefix("cmdstat_"): (int(v["calls"]), int(v["usec"]))
            for name, v in client.info("commandstats").items()}


def top_level(client: redis.Redis
              ) -> tuple[dict[str, list[int]], dict[str, dict[str, int]]]:
    """The queue's calls in SLOWLOG by script name (EVALSHA) or command: their µs each; and
    per script, the µs of the commands it called by command name. A command a script calls is
    logged (client address ``?:0``) just before the script's own entry."""
    names = {s.sha: name for name, s in load_scripts().items()}
    found: dict[str, list[int]] = defaultdict(list)
    inner: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    pending: list[tuple[str, int]] = []
    for entry in reversed(client.slowlog_get(4_000_000)):  # oldest first
        words = entry["command"].split()
        name = words[0].decode().upper()
        if entry.get("client_address") in (b"?:0", "?:0"):
            pending.append((name, int(entry["duration"])))
            continue
        if name == "EVALSHA" and len(words) > 1:
            name = names.get(words[1].decode(), "EVALSHA ?")
            for command, usec in pending:
                inner[name][command] += usec
        pending = []
        if entry.get("client_name") in (HARNESS, HARNESS.encode()) or name in (
                "SLOWLOG", "INFO", "CONFIG"):
            continue
        found[name].append(int(entry["duration"]))
    return found, inner


def outer_usec(stats: dict[str, tuple[int, int]], calls: dict[str, list[int]],
               inner: dict[str, dict[str, int]]) -> float:
    """The µs of the calls clients made, from ``commandstats`` of a run without SLOWLOG: every
    ``EVALSHA``, and of each other command the share its calls from clients had in the run with
    SLOWLOG (``calls``, ``inner``: its calls from scripts are inside the ``EVALSHA`` already)."""
    from_scripts: dict[str, int] = defaultdict(int)
    for called in inner.values():
        for command, usec in called.items():
            from_scripts[command.lower()] += usec
    total = 0.0
    for name, (_, usec) in stats.items():
        if name.startswith(("info", "config", "slowlog", "client")):
            continue
        if name == "evalsha":
            total += usec
            continue
        outer = sum(calls.get(name.split("|")[0].upper(), []))
        both = outer + from_scripts.get(name.split("|")[0], 0)
        total += usec * (outer / both if both else 0.0)  # 0: the harness's own
    return total


def life(url: str, client: redis.Redis, jobs: int, events: bool, name: str = "life"
         ) -> tuple[dict[str, list[int]], dict[str, dict[str, int]],
                    dict[str, tuple[int, int]], bytes]:
    """One life run: (top-level calls and the commands each script called, both from SLOWLOG
    (empty when it is off), ``commandstats``, one job's record as stored)."""
    with Workers(url, name, 1, mode="noop") as workers:
        workers.wait_ready(client)
        queue = sd.Queue(name, url=url, events=events) if events else sd.Queue(name, url=url)
        queue.migrate()
        offset_ms, _ = measure_clock_offset(client)
        due_at_ms = server_now_ms(client) + 2000 + jobs / 10
        client.config_resetstat()
        client.slowlog_reset()
        for start in range(0, jobs, ENQUEUE_BATCH):
            queue.enqueue_many([sd.JobSpec("bench.job", BODY, at=due_at_ms / 1000, id=f"j{i}")
                                for i in range(start, min(jobs, start + ENQUEUE_BATCH))])
        queue.close()
        if server_now_ms(client) >= due_at_ms:
            raise RuntimeError("enqueueing took longer than the lead")
        record = client.hget(keys_of(name).jobs, "j0") or b""
        wait_drained(client, keys_of(name).jobs, due_at_ms, offset_ms, workers)
        time.sleep(0.2)  # the last ack's reply and the worker's next read
        calls, inner = top_level(client)
        stats = commandstats(client)
    return calls, inner, stats, record


def floor(client: redis.Redis, jobs: int, record: bytes, tag: str = "f"
          ) -> dict[str, tuple[int, int]]:
    """The same jobs through plain commands; the ``commandstats`` of that run alone."""
    jobs_key, delayed = f"{tag}:{{f}}:jobs", f"{tag}:{{f}}:delayed"
    stream = f"{tag}:{{f}}:t:bench.job"
    client.xgroup_create(stream, "g", id="0", mkstream=True)
    client.config_resetstat()
    due = int(server_now_ms(client))
    raw_floor.enqueue(client, jobs_key, delayed, jobs, record, due)
    raw_floor.promote(client, delayed, stream, due, record)
    while entries := raw_floor.read(client, stream, "g"):
        raw_floor.ack(client, stream, "g", jobs_key, entries)
    return commandstats(client)


def plain_usec(stats: dict[str, tuple[int, int]]) -> int:
    """The µs of a floor run's commands (the harness's INFO and CONFIG left out)."""
    return sum(usec for name, (_, usec) in stats.items()
               if not name.startswith(("info", "config")))


def measure(jobs: int = 20_000, events: bool = False, rounds: int = 5
            ) -> tuple[float, float, Section]:
    """(life µs per job, floor µs per job, the section)."""
    with redis_server(*SLOWLOG_ALL) as server:
        client = server.client()
        client.client_setname(HARNESS)
        calls, inner, _, record = life(server.url, client, jobs, events)
        raw = floor(client, jobs, record)
    # the headline figures: rounds of a life then its floor, on a server without SLOWLOG (no
    # entry made per command); each round's ratio, the median of the rounds
    lives, floors, doubled = [], [], []
    with redis_server() as server:
        client = server.client()
        client.client_setname(HARNESS)
        for number in range(rounds):
            _, _, stats, _ = life(server.url, client, jobs, events, f"life{number}")
            lives.append(outer_usec(stats, calls, inner) / jobs)
            doubled.append(sum(u for n, (_, u) in stats.items() if not n.startswith(
                ("info", "config", "slowlog", "client"))) / jobs)
            floors.append(plain_usec(floor(client, jobs, record, f"f{number}")) / jobs)
    ratios = [a / b for a, b in zip(lives, floors, strict=True)]
    # judged on each side's least disturbed round (the lowest): on a shared machine a round's
    # sum also counts the time Redis waited for a core in the middle of a call
    life_us, floor_us = min(lives), min(floors)
    ratio = life_us / floor_us
    total = sum(sum(d) for d in calls.values())
    rows = []
    for name, durations in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
        spent, called = sum(durations), sum(inner.get(name, {}).values())
        scripted = name in inner or name[0].islower()
        rows.append([f"`{name}`", STEPS.get(name, "other"), f"{len(durations):,}",
                     f"{spent / len(durations):,.1f}", f"{spent / jobs:.2f}",
                     f"{called / jobs:.2f}" if scripted else "-",
                     f"{(spent - called) / jobs:.2f}" if scripted else "-",
                     f"{spent / total:.0%}"])
    tag = "events on" if events else "events off"
    section = Section(
        f"A job's whole life on the server: {jobs:,} jobs, `enqueue_many` by {ENQUEUE_BATCH}, "
        f"promoted, read and acknowledged by one worker ({tag}) {{#life}}",
        ["call", "step", "calls", "µs per call", "µs per job", "of it, commands the script "
         "calls (µs per job)", "of it, Lua itself (µs per job)", "share"], rows,
        figures={"life_us": life_us, "life_floor_us": floor_us, "life_ratio": ratio})
    section.verdicts = [verdict(
        f"a job's whole life <= {TARGET:g}x the raw floor (stretch {STRETCH:g}x)",
        ratio <= TARGET,
        f"{life_us:.1f} µs of Redis time per job against {floor_us:.1f} µs for the same jobs "
        f"through plain commands (the lowest of {rounds} rounds each): {ratio:.2f}x; each "
        "round's own ratio " + ", ".join(f"{r:.2f}x" for r in ratios), f"{LISTED_TARGET}life")]
    steps: dict[str, float] = defaultdict(float)
    for name, durations in calls.items():
        steps[STEPS.get(name, "other")] += sum(durations) / jobs
    section.notes = [
        "By step, µs per job: " + ", ".join(f"{step} {us:.1f}" for step, us in sorted(
            steps.items(), key=lambda kv: -kv[1])) + "; raw floor "
        + ", ".join(f"`{n.upper()}` {usec / jobs:.2f}" for n, (_, usec) in sorted(
            raw.items(), key=lambda kv: -kv[1][1]) if n not in ("info", "config|resetstat"))
        + f" (total {plain_usec(raw) / jobs:.1f} in the SLOWLOG run). Life per round "
        + ", ".join(f"{v:.1f}" for v in lives) + " µs, floor " + ", ".join(
            f"{v:.1f}" for v in floors) + " µs; every `commandstats` line summed (a script's "
        "commands counted twice, in their own line and in the `EVALSHA`'s) "
        + ", ".join(f"{v:.1f}" for v in doubled) + " µs per job.",
        "The commands each script called, µs per job: " + "; ".join(
            f"`{name}` " + ", ".join(f"{c} {us / jobs:.2f}" for c, us in sorted(
                called.items(), key=lambda kv: -kv[1])[:6])
            for name, called in sorted(inner.items(), key=lambda kv: -sum(kv[1].values()))
            if sum(called.values()) / jobs >= 0.05) + ".",
        "Every call the queue's clients made is counted (SLOWLOG with every call logged, "
        "`benchmarks/e2e/life.py`): the producer's, the dispatcher's and the worker's, its idle "
        "polls and bookkeeping too; a call's time is Redis' own (no round trip). The table comes "
        "from a run with every call in SLOWLOG: a script's commands are logged too, just before "
        "it, which attributes them to it; \"Lua itself\" is the rest of its time (its own code, "
        "its arguments and reply, and the SLOWLOG entries of its commands: "
        f"{total / jobs:.1f} µs per job in all there). The headline figure comes from a second "
        "run without SLOWLOG (`INFO commandstats`: every `EVALSHA`, and the other commands' "
        "calls from clients), the floor from `commandstats` of the plain commands.",
    ]
    return life_us, floor_us, section


def run(jobs: int = 20_000, rounds: int = 5) -> Section:
    """The section of ``make bench`` (events off, the default of a queue)."""
    return measure(jobs, rounds=rounds)[2]


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--events", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    measure(args.jobs, args.events, args.rounds)[2].print()


if __name__ == "__main__":
    main()
