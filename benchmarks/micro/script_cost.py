"""Redis time per call of the hot-path scripts, each against its plain commands, in one process.

A job's life split by script, without a worker process: ``enqueueJobs`` of 100 jobs (through
``Queue.enqueue_many``), ``promoteDue`` of 200 due jobs, ``XREADGROUP COUNT 64`` then
``ackJobs`` of what it read; and one ``enqueue`` call per job (``Queue.enqueue``). Each script's
time is the ``EVALSHA`` line of ``INFO commandstats`` over its calls (a private redis-server per
repeat, the lowest of the repeats: the figure least moved by a loaded machine). The same jobs
through plain commands batched the same way (``HSET`` + ``ZADD``; ``ZRANGEBYSCORE`` + ``ZREM`` +
``XADD``; ``XACK`` + ``XDEL`` + ``HDEL``) give the floor of each step. ``--lua DIR`` runs the
scripts of another checkout's ``lua/`` (e.g. a worktree of an older commit) in the same run.

Run: ``.venv/bin/python benchmarks/micro/script_cost.py [--jobs 20000] [--repeats 3]
[--lua DIR ...]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis

import streamdelay as sd
from benchmarks.core import raw_floor
from benchmarks.core.harness import BODY, Section, keys_of, redis_server, server_now_ms
from streamdelay.protocol import scripts as scripts_module

# the scripts batch as the raw floor does
ENQUEUE_BATCH, PROMOTE_BATCH, READ_COUNT = (raw_floor.ENQUEUE_BATCH, raw_floor.PROMOTE_BATCH,
                                            raw_floor.READ_COUNT)
SINGLE = 2_000  # one-call-per-job enqueues per repeat
GROUP = "g"


def evalsha_usec(client: redis.Redis) -> tuple[int, int]:
    """(calls, usec) of the EVALSHA line of ``commandstats``."""
    line = client.info("commandstats").get("cmdstat_evalsha", {"calls": 0, "usec": 0})
    return int(line["calls"]), int(line["usec"])


def plain_usec(client: redis.Redis) -> int:
    """The µs of every command but the harness's INFO and CONFIG."""
    return sum(int(v["usec"]) for n, v in client.info("commandstats").items()
               if not n.startswith(("cmdstat_info", "cmdstat_config")))


def scripted(url: str, client: redis.Redis, jobs: int) -> dict[str, float]:
    """µs per job of each step through the scripts (one enqueue per job: µs per call)."""
    out: dict[str, float] = {}
    queue = sd.Queue("sc", url=url)
    keys = keys_of("sc")
    promote = scripts_module.script("promoteDue")
    ack = scripts_module.script("ackJobs")
    client.config_resetstat()
    for i in range(SINGLE):
        queue.enqueue("bench.job", BODY, delay=3600.0, id=f"s{i}")
    out["enqueue one call"] = evalsha_usec(client)[1] / SINGLE
    due = server_now_ms(client) / 1000
    client.config_resetstat()
    for start in range(0, jobs, ENQUEUE_BATCH):
        queue.enqueue_many([sd.JobSpec("bench.job", BODY, at=due, id=f"j{i}")
                            for i in range(start, min(jobs, start + ENQUEUE_BATCH))])
    out["enqueue_many"] = evalsha_usec(client)[1] / jobs
    queue.close()
    stream = keys.prefix + "t:bench.job"
    client.xgroup_create(stream, GROUP, id="0", mkstream=True)
    client.script_load(promote.source)
    client.script_load(ack.source)
    client.config_resetstat()
    while True:
        moved = client.evalsha(promote.sha, 6, *keys.script_keys(), PROMOTE_BATCH)
        if not moved[0]:
            break
    out["promoteDue"] = evalsha_usec(client)[1] / jobs
    read_us = ack_us = 0
    while True:
        client.config_resetstat()
        reply = client.xreadgroup(GROUP, "c", {stream: ">"}, count=READ_COUNT)
        if not reply or not reply[0][1]:
            break
        stats = client.info("commandstats")
        read_us += int(stats["cmdstat_xreadgroup"]["usec"])
        flat: list[str | bytes] = []
        for entry_id, fields in reply[0][1]:
            flat += ["bench.job", fields[b"id"], entry_id]
        client.config_resetstat()
        client.evalsha(ack.sha, 6, *keys.script_keys(), GROUP, 0, len(flat) // 3, *flat, 0)
        ack_us += evalsha_usec(client)[1]
    out["read"] = read_us / jobs
    out["ackJobs"] = ack_us / jobs
    return out


def floor(client: redis.Redis, jobs: int, record: bytes) -> dict[str, float]:
    """µs per job of each step through plain commands, batched the same way."""
    out: dict[str, float] = {}
    jobs_key, delayed, stream = "f:{f}:jobs", "f:{f}:delayed", "f:{f}:t:bench.job"
    client.xgroup_create(stream, GROUP, id="0", mkstream=True)
    client.config_resetstat()
    for i in range(SINGLE):  # one job per call: a pipeline of HSET + ZADD
        pipe = client.pipeline(transaction=False)
        pipe.hset("f:{f}:single", f"s{i}", record)
        pipe.zadd("f:{f}:sdelayed", {f"s{i}": 1})
        pipe.execute()
    out["enqueue one call"] = plain_usec(client) / SINGLE
    due = int(server_now_ms(client))
    client.config_resetstat()
    raw_floor.enqueue(client, jobs_key, delayed, jobs, record, due)
    out["enqueue_many"] = plain_usec(client) / jobs
    client.config_resetstat()
    raw_floor.promote(client, delayed, stream, due, record)
    out["promoteDue"] = plain_usec(client) / jobs
    read_us = ack_us = 0
    while True:
        client.config_resetstat()
        entries = raw_floor.read(client, stream, GROUP)
        if not entries:
            break
        read_us += plain_usec(client)
        client.config_resetstat()
        raw_floor.ack(client, stream, GROUP, jobs_key, entries)
        ack_us += plain_usec(client)
    out["read"] = read_us / jobs
    out["ackJobs"] = ack_us / jobs
    return out


def once(jobs: int, lua: Path | None) -> tuple[dict[str, float], dict[str, float]]:
    """One repeat: (scripted, floor) on a private server; ``lua``: that directory's scripts."""
    if lua is not None:
        scripts_module.lua_dir = lambda: lua  # type: ignore[assignment]
    scripts_module.load_scripts.cache_clear()
    with redis_server() as server:
        client = server.client()
        ours = scripted(server.url, client, jobs)
        record = client.hget(keys_of("sc").jobs, "s0") or b""
        return ours, floor(client, jobs, record)


def run(jobs: int = 20_000, repeats: int = 3, luas: tuple[Path | None, ...] = (None,)
        ) -> Section:
    """The table: each step's µs per job, lowest of ``repeats`` (alternating the ``luas``)."""
    best: dict[Path | None, dict[str, float]] = {}
    raw: dict[str, float] = {}
    default = scripts_module.lua_dir
    for _ in range(repeats):
        for lua in luas:
            ours, plain = once(jobs, lua)
            scripts_module.lua_dir = default  # type: ignore[assignment]
            mine = best.setdefault(lua, {})
            for step, us in ours.items():
                mine[step] = min(us, mine.get(step, us))
            for step, us in plain.items():
                raw[step] = min(us, raw.get(step, us))
    names = [str(lua or "this checkout") for lua in luas]
    rows = []
    for step in raw:
        rows.append([step, *(f"{best[lua][step]:.2f}" for lua in luas), f"{raw[step]:.2f}",
                     " / ".join(f"{best[lua][step] / raw[step]:.2f}x" for lua in luas)])
    life = {lua: sum(v for k, v in best[lua].items() if k != "enqueue one call") for lua in luas}
    floor_life = sum(v for k, v in raw.items() if k != "enqueue one call")
    rows.append(["life (all but one call)", *(f"{life[lua]:.2f}" for lua in luas),
                 f"{floor_life:.2f}", " / ".join(f"{life[lua] / floor_life:.2f}x"
                                                for lua in luas)])
    return Section("Hot-path scripts: Redis µs per job (per call for one call per job), lowest "
                   f"of {repeats} repeats",
                   ["step", *names, "plain commands", "ratio"], rows)


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lua", type=Path, action="append", default=[])
    args = parser.parse_args()
    run(args.jobs, args.repeats, (None, *args.lua)).print()


if __name__ == "__main__":
    main()
