"""Lifecycle events: what happened to each job, read back and followed (docs/events.md)."""

import threading

import streamdelay as sd

queue = sd.Queue("shipping", events=True)  # turns the queue's events on, for every process
queue.enqueue("parcel.ship", {"parcel": 7}, id="parcel-7")
queue.enqueue("parcel.ship", {"parcel": 8}, id="parcel-8", max_attempts=1)

worker = sd.Worker(queue, group="shipping")


@worker.handler("parcel.ship")
def ship(job: sd.Job) -> None:
    """Parcel 8 cannot be shipped: its only attempt fails and it goes dead."""
    if job.body["parcel"] == 8:
        raise RuntimeError("address unknown")


worker.run(until_idle=True)
history: dict[str, list[str]] = {}
for event in queue.events(follow=False):  # what is kept, oldest first, then it stops
    history.setdefault(event.id, []).append(event.kind)
    last = event.cursor
for job_id, kinds in sorted(history.items()):
    print(job_id, " ".join(kinds))


def follow() -> None:
    """Follows the queue after the last event read: blocks until the next one comes."""
    for event in queue.events(since=last):
        print("next:", event.id, event.kind, event.detail)
        return


follower = threading.Thread(target=follow)
follower.start()
queue.enqueue("parcel.ship", {"parcel": 9}, id="parcel-9", delay=3600)
follower.join()
queue.cancel("parcel-9")
