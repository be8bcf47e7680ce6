"""Workflows: a job after its parents, a chain, a batch with callbacks (docs/workflows.md)."""

import streamdelay as sd

queue = sd.Queue("etl", keep_result=3600)
queue.enqueue("fetch", {"source": "eu"}, id="fetch-eu")
queue.enqueue("fetch", {"source": "us"}, id="fetch-us")
# waits (state "waiting") until both parents succeeded, then is due after its own delay
merged = queue.enqueue("merge", id="merge", after=["fetch-eu", "fetch-us"], delay=0.1)
print("merge:", merged.state)
queue.chain([sd.JobSpec("step", {"n": n}, id=f"step-{n}") for n in (1, 2, 3)])
info = queue.batch([sd.JobSpec("page", {"page": p}, id=f"page-{p}") for p in range(5)],
                   id="pages", on_success=sd.JobSpec("notify", {"all": "ok"}),
                   on_complete=sd.JobSpec("notify", {"finished": True}))
print("batch:", info.total, info.state)

order = []
worker = sd.Worker(queue, group="reports")


@worker.handler("fetch")
def fetch(job: sd.Job) -> int:
    order.append(job.id)
    return {"eu": 3, "us": 4}[job.body["source"]]


@worker.handler("merge")
def merge(job: sd.Job) -> None:
    """A child reads its parents' results with queue.result (they keep theirs: keep_result)."""
    total = sum(queue.result(p).value for p in ("fetch-eu", "fetch-us"))
    order.append(f"merge={total}")


@worker.handler("step")
def step(job: sd.Job) -> None:
    order.append(job.id)


@worker.handler("page")
def page(job: sd.Job) -> None:
    pass


@worker.handler("notify")
def notify(job: sd.Job) -> None:
    order.append(job.id)


worker.run(until_idle=True)
print("merge after fetches:", order.index("merge=7") > max(order.index("fetch-eu"),
                                                         order.index("fetch-us")))
print("chain:", [o for o in order if o.startswith("step")])
print("callbacks:", sorted(o for o in order if o.startswith("pages@")))
done = queue.batch_info("pages")
print("batch:", done.succeeded, done.dead, done.pending, done.state)
