"""Execution control: checkpoints across attempts, a snooze, and the abort of a running job."""

import threading
import time
from collections import defaultdict

import streamdelay as sd

queue = sd.Queue("exports", backoff=[0.1], keep_result=60)
queue.enqueue("export.pages", {"pages": 5}, id="export-1")
queue.enqueue("export.wait", {"for": "upstream"}, id="wait-1")
queue.enqueue("export.slow", {}, id="slow-1")

worker = sd.Worker(queue, group="exporters", concurrency=4)
seen: defaultdict[str, list[str]] = defaultdict(list)
slow_started = threading.Event()


@worker.handler("export.pages")
async def export_pages(job: sd.Job) -> None:
    """Resume after the last page a previous attempt finished (its checkpoint)."""
    first = job.last_checkpoint or 0
    for page in range(first, job.body["pages"]):
        seen[job.id].append(f"attempt {job.attempt}: page {page}")
        job.checkpoint(page + 1)  # the next attempt starts after this page
        if page == 2 and job.attempt == 1:
            raise RuntimeError("upstream timed out")  # a failed attempt; pages 0-2 are kept


@worker.handler("export.wait")
def wait_for_upstream(job: sd.Job) -> None:
    """Not ready yet: come back later without spending an attempt."""
    if job.last_checkpoint is None:
        seen[job.id].append(f"attempt {job.attempt}: upstream not ready, snoozing")
        job.checkpoint("asked")
        raise sd.Snooze(0.2)
    seen[job.id].append(f"attempt {job.attempt}: upstream ready")


@worker.handler("export.slow")
def slow(job: sd.Job) -> None:
    """A def handler's thread cannot be killed: it looks at job.aborted between steps."""
    slow_started.set()
    while not job.aborted:
        time.sleep(0.01)  # one step of the work
    seen[job.id].append("aborted, stopping")
    job.check_abort()  # raises sd.Aborted: the job is already cancelled, nothing to settle


def operator() -> None:
    """What `streamdelay cancel exports slow-1 --abort` does from anywhere."""
    slow_started.wait()
    queue.cancel("slow-1", abort=True)


threading.Thread(target=operator).start()
worker.run(until_idle=True)
for job_id in ("export-1", "wait-1", "slow-1"):
    for line in seen[job_id]:
        print(f"{job_id}: {line}")
result = queue.result("slow-1")
assert result is not None
print(f"slow-1 ended {result.state}: {result.error}")
queue.close()
