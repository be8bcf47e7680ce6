"""Redis time of a heartbeat (``touchJobs``) per touched delivery (docs/keys.md#held-jobs).

One private redis-server: N jobs are promoted and read by one consumer (plain XREADGROUP), then
``touchJobs`` of all N is sent ROUNDS times after ``CONFIG RESETSTAT``; the figure is
``cmdstat_evalsha`` usec per call divided by N. No job is held, the common case: what a
heartbeat pays for the held-job check. Run on two checkouts to compare them:
``.venv/bin/python benchmarks/micro/touch_cost.py [--jobs 100] [--rounds 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import streamdelay as sd
from benchmarks.core.harness import keys_of, redis_server
from streamdelay.protocol.deliveries import touch_call


async def _promote(queue: sd.Queue, jobs: int) -> None:
    dispatcher = sd.Dispatcher(queue.config)
    moved = 0
    while moved < jobs:
        moved += (await dispatcher.promote_once(keys_of(queue.name))).moved
    await dispatcher.client.aclose()


def main() -> None:
    """Print the Redis time per touched delivery."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with redis_server() as server:
        queue = sd.Queue("touch", url=server.url)
        keys = keys_of(queue.name)
        queue.enqueue_many([sd.JobSpec("t", i, id=f"j{i}", ttr=600) for i in range(args.jobs)])
        queue.client.xgroup_create(keys.stream("t"), "g", id="0", mkstream=True)
        queue.client.hset(keys.groups, "t", "g")
        asyncio.run(_promote(queue, args.jobs))
        reply = queue.client.xreadgroup("g", "me", {keys.stream("t"): ">"}, count=args.jobs)
        flat = [part for entry, _ in reply[0][1] for part in ("t", entry.decode())]
        call = touch_call(keys, "g", "me", flat)
        sha = queue.client.script_load(call.script.source)
        queue.client.config_resetstat()
        for _ in range(args.rounds):
            queue.client.evalsha(sha, len(call.keys), *call.keys, *call.args)
        usec = float(queue.client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])
        print(f"touchJobs of {args.jobs} deliveries: {usec:.0f} us of Redis time per call, "
              f"{usec / args.jobs:.2f} us per delivery ({args.rounds} calls)")
        queue.close()


if __name__ == "__main__":
    main()
