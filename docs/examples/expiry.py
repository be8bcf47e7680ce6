"""Expiry: a job that has not started by its deadline never runs (docs/expiry.md)."""

import time

import streamdelay as sd

queue = sd.Queue("alerts", events=True)
queue.enqueue("alert.page", {"to": "ops"}, id="page-1", expires=0.5)  # stale 0.5 s after due
queue.enqueue("alert.page", {"to": "dev"}, id="page-2", expires=60)
time.sleep(1)  # no worker is running: page-1's deadline passes


def serve() -> None:
    """Run a worker until nothing is left to do."""
    worker = sd.Worker(queue, group="alerts")

    @worker.handler("alert.page")
    def page(job: sd.Job) -> None:
        print("paged", job.body["to"], "for", job.id)

    worker.run(until_idle=True)


serve()  # page-2 runs; page-1 goes to the dead letters, never to the handler
for dead in queue.dead_list("alert.page"):
    print("dead:", dead.id, dead.error, "after", dead.attempts, "attempts")
print("events of page-1:", [e.kind for e in queue.events(follow=False) if e.id == "page-1"])
print("replayed:", queue.dead_replay("alert.page"))  # a replay drops the deadline
serve()
