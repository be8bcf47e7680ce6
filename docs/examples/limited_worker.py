"""Limits: at most 2 calls of a fragile API at once and 10 per second, across every worker."""

import asyncio
import time

import streamdelay as sd

queue = sd.Queue("partners")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0
# Kept in Redis: every worker process of the queue, on any host, obeys it (within 1 s).
queue.limit("partner.call", rate="10/s", concurrency=2)
queue.enqueue_many([sd.JobSpec("partner.call", {"n": n}, id=f"call-{n}") for n in range(25)])

worker = sd.Worker(queue, group="partners", concurrency=8)
running, peak, started = 0, 0, []


@worker.handler("partner.call")
async def call_partner(job: sd.Job) -> None:
    """Eight free slots, yet no more than two of these run at once."""
    global running, peak
    running += 1
    peak = max(peak, running)
    started.append(time.monotonic())
    await asyncio.sleep(0.05)  # the API call
    running -= 1


worker.run(until_idle=True)
print(f"handled {worker.counts['handled']} calls, at most {peak} at once")
# Two at once would start 40 calls a second; the bucket (10 tokens, 10 more per second) lets
# about 13 start in the first third of a second, then 10 a second: the 25th near 1.5 s.
print("the 25th call started 1.2 s or more after the first:", started[-1] - started[0] >= 1.2)
row = queue.stats().topics["partner.call"]
print(f"stats: rate {row.rate}, concurrency {row.concurrency}, {row.leases} running now")
queue.limit("partner.call", clear=True)  # the limit is removed
print("limits after clearing:", queue.limits())
queue.close()
