"""Batch callbacks with job options (docs/workflows.md#callback-options)."""

import streamdelay as sd

queue = sd.Queue("invoices")
info = queue.batch(
    [sd.JobSpec("pdf", {"invoice": n}, id=f"pdf-{n}") for n in range(3)], id="nov",
    on_success=sd.JobSpec("notify", {"all": "ok"}, priority=9, expires=600, max_attempts=3,
                          key="tenant-42"),
    on_complete=sd.JobSpec("archive", {"month": "2026-11"}, key="tenant-42", delay=0.1))
print("batch:", info.id, info.on_success, info.on_complete)

worker = sd.Worker(queue, group="billing")
seen = []


@worker.handler("pdf")
def pdf(job: sd.Job) -> None:
    pass


@worker.handler("notify")
@worker.handler("archive")
def callback(job: sd.Job) -> None:
    """A callback is an ordinary job: it has the options its JobSpec gave."""
    info = queue.get(job.id)
    seen.append(f"{job.topic} {job.id} priority={info.priority} key={info.key} "
                f"expires={info.expires_at is not None} max_attempts={info.max_attempts}")


worker.run(until_idle=True)
print("\n".join(sorted(seen)))
done = queue.batch_info(info.id)
print("batch:", done.succeeded, done.state)
