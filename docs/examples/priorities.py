"""Priorities and fairness keys: urgent work first, and one tenant's backlog starves no other."""

import streamdelay as sd

queue = sd.Queue("tenant-reports")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0
queue.limit("report.build", key_concurrency=1)  # each tenant builds one report at a time
for n in range(5):  # a big tenant queues five reports first
    queue.enqueue("report.build", {"n": n}, id=f"r{n}", key="big-corp")
queue.enqueue("report.build", {"n": 0}, id="r0", key="small-shop")  # two small ones, later
queue.enqueue("report.build", {"n": 0}, id="r0", key="tiny-inc")
queue.enqueue("report.build", {"n": 9}, id="r9", key="big-corp", priority=9)  # urgent

worker = sd.Worker(queue, group="reports", concurrency=1)
started = []


@worker.handler("report.build")
async def build(job: sd.Job) -> None:
    """The job's id carries its key: {big-corp}r9."""
    started.append(job.id)


worker.run(until_idle=True)
print("started:", " ".join(started))
row = queue.stats().topics["report.build"]
print(f"stats: staged {row.staged}, each key {row.key_concurrency} at once, {row.ready} ready")
queue.close()
