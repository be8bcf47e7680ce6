"""Consume without a Worker: reserve jobs, then ack, fail or touch each (docs/pull.md)."""

import asyncio
import threading

import streamdelay as sd

queue = sd.Queue("monthly-reports", backoff=[0.1], max_attempts=2)
queue.enqueue("report.build", {"month": "2026-10"}, id="oct")
queue.enqueue("report.build", {"month": "2026-13"}, id="bad")
queue.enqueue("report.build", {"month": "2026-11"}, id="nov", delay=0.5)

# Due jobs move into their stream by a dispatcher: the one inside every Worker, `streamdelay
# dispatch monthly-reports`, or `streamdelay serve`. This program has none of those, so it
# runs one.
dispatcher = sd.Dispatcher(queue.config)
threading.Thread(target=asyncio.run, args=(dispatcher.run(),), daemon=True).start()

log: list[str] = []
while len(log) < 4:  # oct, nov and the two attempts of bad
    for r in queue.reserve("report.build", consumer="reporter-1", wait=5, count=10):
        if r.body["month"].endswith("-13"):
            outcome = r.fail("ValueError: there is no month 13")  # its backoff, then dead
            log.append(f"{r.id}: attempt {r.attempt} failed, {outcome}")
        else:
            r.touch()  # a long job touches well within its ttr (a Worker does it every ttr/3)
            r.ack()
            log.append(f"{r.id}: attempt {r.attempt} built")
print("\n".join(sorted(log)))
print("dead:", [dead.id for dead in queue.dead_list("report.build")])

# The receipt is all another process needs to settle a reservation (the HTTP service does so).
queue.enqueue("report.build", {"month": "2026-12"}, id="dec")
[taken] = queue.reserve("report.build", consumer="reporter-1", wait=5)
receipt: str = taken.receipt  # URL-safe text
queue.reservation(receipt).ack()
print("dec acknowledged by its receipt:", queue.get("dec") is None)
try:
    taken.ack()
except sd.StaleReceipt:
    print("a second ack: StaleReceipt")
queue.dead_purge("report.build")
queue.close()
